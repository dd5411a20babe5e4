// ffn trace --page: hover, tap or keyboard to a step, and the panel shows what the table shows for it.
function ffnPage(rootId) {
  "use strict";
  var root = document.getElementById(rootId);
  if (!root) return;
  root.classList.add("live");
  var nodes = Array.prototype.slice.call(root.querySelectorAll("[data-node]"));
  var intro = root.querySelector(".panel .intro");
  var current = null;
  function select(node) {
    if (node === current) return;
    if (current) {
      current.classList.remove("selected");
      current.setAttribute("aria-pressed", "false");
      var old = document.getElementById(rootId + "-d-" + current.getAttribute("data-node"));
      if (old) old.hidden = true;
    }
    current = node;
    if (intro) intro.hidden = node !== null;
    if (!node) return;
    node.classList.add("selected");
    node.setAttribute("aria-pressed", "true");
    var detail = document.getElementById(rootId + "-d-" + node.getAttribute("data-node"));
    if (detail) detail.hidden = false;
  }
  nodes.forEach(function (node, i) {
    node.setAttribute("aria-pressed", "false");
    node.addEventListener("mouseenter", function () { select(node); });
    node.addEventListener("focus", function () { select(node); });
    node.addEventListener("click", function () { select(node); });
    node.addEventListener("keydown", function (event) {
      var next = null;
      if (event.key === "ArrowDown" || event.key === "ArrowRight" || event.key === "j") next = nodes[i + 1];
      else if (event.key === "ArrowUp" || event.key === "ArrowLeft" || event.key === "k") next = nodes[i - 1];
      else if (event.key === "Home") next = nodes[0];
      else if (event.key === "End") next = nodes[nodes.length - 1];
      else if (event.key === "Enter" || event.key === " ") { select(node); event.preventDefault(); return; }
      else if (event.key === "Escape") { select(null); node.blur(); return; }
      if (next) { next.focus(); event.preventDefault(); }
    });
  });
}
