// MirrorBench: on a phone the board's filter panel starts folded. Loaded (not deferred) right
// after the panel, so it runs before the page is first drawn: the panel never flashes open.
(function () {
  "use strict";
  var panel = document.currentScript && document.currentScript.previousElementSibling;
  if (panel && window.matchMedia && window.matchMedia("(max-width: 700px)").matches) {
    panel.removeAttribute("open");
  }
})();
