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

/**
 * How much of `el` a person sees (issue 34): its height in CSS px at which the point in the middle of its width hits
 * `el` or something inside it — so what a scrolling ancestor clips, what lies outside the page and what another
 * element covers (the card's sticky buttons) do not count — and `top`, how far below its top edge the first such
 * point is (0: its first line shows). Sampled every 2 px.
 */
export function shownHeight(/** @type {Element} */ el) {
  const r = el.getBoundingClientRect();
  const x = r.left + r.width / 2;
  let shown = 0;
  let top = -1;
  for (let dy = 1; dy < r.height; dy += 2) {
    const hit = document.elementFromPoint(x, r.top + dy);
    if (hit === null || !el.contains(hit)) continue;
    shown += 2;
    if (top < 0) top = dy - 1;
  }
  return { shown, top, height: r.height };
}
