// Follows a waiting payment until it is final, then continues to the merchant. Without
// JavaScript the page refreshes itself (meta refresh), so this only makes it faster.
(function () {
  var main = document.querySelector("main[data-status-url]");
  if (!main) { return; }
  var statusURL = main.getAttribute("data-status-url");
  var live = document.getElementById("live");
  function poll() {
    fetch(statusURL, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (s) {
        if (s.final) {
          if (live && s.message) { live.textContent = s.message; }
          window.location.replace(s.redirect);
          return;
        }
        setTimeout(poll, 1500);
      })
      .catch(function () { setTimeout(poll, 3000); });
  }
  setTimeout(poll, 1000);
})();
