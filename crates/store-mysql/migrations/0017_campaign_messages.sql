-- Operators' campaign messages (issue 35; PostgreSQL's 0031, SQLite's 0029). See PostgreSQL's
-- migration for what each column holds. No partial indexes here: the sending ones are found
-- through (finished_at, id).
CREATE TABLE campaign_messages (
    id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    template_id BIGINT       NOT NULL,
    owner       BIGINT       NOT NULL,
    actor       VARCHAR(255) NOT NULL,
    title       TEXT         NOT NULL,
    message     TEXT         NOT NULL,
    segment     TEXT,
    next_after  VARCHAR(64),
    recipients  BIGINT       NOT NULL DEFAULT 0,
    queued      BIGINT       NOT NULL DEFAULT 0,
    created_at  BIGINT       NOT NULL,
    finished_at BIGINT,
    INDEX campaign_messages_by_owner (owner, created_at),
    INDEX campaign_messages_by_template (template_id, id),
    INDEX campaign_messages_sending (finished_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
