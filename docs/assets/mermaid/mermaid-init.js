// Draws every ```mermaid block of a page with the vendored mermaid.min.js. mdBook renders such a
// block as <pre><code class="language-mermaid">; it is replaced by <pre class="mermaid"> with the
// same text, which mermaid turns into an SVG. The dark mdBook themes get mermaid's dark theme.
(function () {
  const dark = ["coal", "navy", "ayu"].some((t) => document.documentElement.classList.contains(t));
  const blocks = document.querySelectorAll("code.language-mermaid");
  if (blocks.length === 0) {
    return;
  }
  blocks.forEach((code) => {
    const pre = document.createElement("pre");
    pre.className = "mermaid";
    pre.textContent = code.textContent;
    code.parentElement.replaceWith(pre);
  });
  mermaid.initialize({ startOnLoad: false, theme: dark ? "dark" : "default", securityLevel: "strict" });
  mermaid.run({ querySelector: "pre.mermaid" });
})();
