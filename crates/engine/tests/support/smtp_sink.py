"""A real SMTP server for coupond's email tests (aiosmtpd): each message it accepts is
parsed and appended to a JSON-lines file (headers decoded, text and HTML parts), so a test
reads what a mail client would show. Usage: smtp_sink.py PORT OUT_FILE. Prints "ready" once
it listens."""
import asyncio, email, email.policy, json, sys
from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, out):
        self.out = out

    async def handle_DATA(self, server, session, envelope):
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        text = msg.get_body(preferencelist=("plain",))
        html = msg.get_body(preferencelist=("html",))
        line = {
            "rcpt": envelope.rcpt_tos,
            "from": str(msg["From"]),
            "subject": str(msg["Subject"]),
            "message_id": str(msg["Message-ID"]),
            "list_unsubscribe": str(msg["List-Unsubscribe"] or ""),
            "list_unsubscribe_post": str(msg["List-Unsubscribe-Post"] or ""),
            "text": text.get_content() if text else "",
            "html": html.get_content() if html else "",
        }
        with open(self.out, "a", encoding="utf-8") as f:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
        return "250 Message accepted for delivery"


async def main():
    port, out = int(sys.argv[1]), sys.argv[2]
    c = Controller(Sink(out), hostname="127.0.0.1", port=port)
    c.start()
    print("ready", flush=True)
    await asyncio.Event().wait()


asyncio.run(main())
