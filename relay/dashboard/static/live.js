// Live refresh: every data-refresh seconds, re-fetch this page and swap <main>.
// The pages are complete without it; it only saves a reload. Pauses in background tabs.
(function () {
  "use strict";
  var seconds = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
  if (!seconds || !window.fetch || !window.DOMParser) { return; }
  function refresh() {
    if (document.hidden) { return; }
    fetch(window.location.href, { headers: { "Accept": "text/html" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (!html) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("main");
        var current = document.getElementById("main");
        if (fresh && current) { current.replaceWith(fresh); }
      })
      .catch(function () { /* the relay restarted or the network blinked: try next time */ });
  }
  window.setInterval(refresh, seconds * 1000);
})();
