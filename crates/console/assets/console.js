// coupond console: what its pages do beyond htmx, kept out of the pages themselves so that
// their Content-Security-Policy can refuse every inline script and event handler.
//
// A form with `data-confirm` asks before it is sent; cancelling keeps it from being sent.
document.addEventListener("submit", function (event) {
  var form = event.target;
  var ask = form instanceof HTMLFormElement ? form.getAttribute("data-confirm") : null;
  if (ask && !window.confirm(ask)) {
    event.preventDefault();
  }
});
