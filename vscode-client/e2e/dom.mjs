// @ts-check
/**
 * Checks that run inside a page (handed to Playwright's `evaluate`), shared by the code-server e2e (editor.test.mjs)
 * and the page's unit test (test/page.test.ts). Each function is self-contained: Playwright sends its source alone.
 */

/**
 * The text under `root` cut in the middle of a name (issue 34): a text node on two lines that holds no space, or a
 * piece of a command (`.seg`) broken over two lines although it would fit its line whole. A piece wider than its line
 * may break, at its name's own boundaries (the page puts a `<wbr>` there, so each part is a text node of its own).
 */
export function cutWords(/** @type {Element} */ root) {
  /** @type {string[]} */
  const cut = [];
  const lines = (/** @type {Node} */ node) => {
    const range = document.createRange();
    range.selectNodeContents(node);
    return new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top))).size;
  };
  const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n !== null; n = walk.nextNode()) {
    if (lines(n) > 1 && !/\s/.test(n.textContent ?? '')) cut.push(n.textContent ?? '');
  }
  for (const seg of Array.from(root.querySelectorAll('.seg'))) {
    const line = seg.parentElement;
    if (line === null || lines(seg) < 2) continue;
    // Its width on one line, against the line's: a clone laid out without wrapping.
    const probe = /** @type {HTMLElement} */ (seg.cloneNode(true));
    Object.assign(probe.style, { position: 'absolute', visibility: 'hidden', whiteSpace: 'nowrap', maxWidth: 'none', width: 'max-content' });
    line.appendChild(probe);
    const wide = probe.getBoundingClientRect().width;
    probe.remove();
    if (wide <= line.clientWidth) cut.push(seg.textContent ?? '');
  }
  return cut;
}
