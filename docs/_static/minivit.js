// The course site's own script (docs/conf.py). A notebook's figure, which the content column may show smaller than
// it is, opens at its full size over the page on a click (scrolling where it is larger than the window); Escape or
// a click closes it. Each figure is also a link to its image file: ctrl-click or a middle click opens the file
// itself, and the keyboard reaches every figure (Tab, then Enter).
(() => {
  "use strict";

  function markZoomable() {
    for (const link of document.querySelectorAll("a.minivit-zoom")) {
      const img = link.querySelector("img");
      link.classList.toggle("minivit-zoomable", img.naturalWidth > img.clientWidth + 1);
    }
  }

  function openFull(img, link) {
    const overlay = document.createElement("div");
    overlay.className = "minivit-lightbox";
    overlay.setAttribute("role", "dialog");
    overlay.setAttribute("aria-label", "The figure at its full size (Escape closes it)");
    overlay.tabIndex = -1;
    const full = document.createElement("img");
    full.src = img.src;
    full.alt = img.alt;
    overlay.append(full);
    const close = () => {
      overlay.remove();
      document.removeEventListener("keydown", onKey);
      link.focus();
    };
    const onKey = (event) => { if (event.key === "Escape") close(); };
    overlay.addEventListener("click", close);
    document.addEventListener("keydown", onKey);
    document.body.append(overlay);
    overlay.focus();
  }

  document.addEventListener("DOMContentLoaded", () => {
    for (const img of document.querySelectorAll(".cell_output img")) {
      const link = document.createElement("a");
      link.href = img.src;
      link.className = "minivit-zoom";
      link.title = "Open the figure at its full size";
      img.replaceWith(link);
      link.append(img);
      link.addEventListener("click", (event) => {
        if (event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;  // the browser's own
        event.preventDefault();
        if (img.naturalWidth > img.clientWidth + 1) openFull(img, link);
      });
      if (!img.complete) img.addEventListener("load", markZoomable);
    }
    markZoomable();
    window.addEventListener("resize", markZoomable);
    document.addEventListener("toggle", markZoomable, true);  // a figure in a <details> block just opened
  });
})();
