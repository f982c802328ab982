/**
 * The context chart at the top of the transcript (issue 34): model/chart.ts's geometry as SVG elements, in a
 * section the person can fold. Redrawn when new data comes and when the view's width changes; colours are the
 * theme's (transcript.css), the words and numbers are in `aria-label` and `<title>`s.
 */
import { type ChartData, chart } from '../model/chart';

const SVG = 'http://www.w3.org/2000/svg';
/** The drawing's height in CSS pixels: small beside the transcript it sits above. */
export const CHART_HEIGHT = 72;

function el<K extends keyof SVGElementTagNameMap>(name: K, attrs: Record<string, string | number>, testid?: string): SVGElementTagNameMap[K] {
    const node = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    if (testid !== undefined) node.dataset.testid = testid;
    return node;
}

function titled<T extends SVGElement>(node: T, text: string): T {
    const title = el('title', {});
    title.textContent = text;
    node.appendChild(title);
    return node;
}

/**
 * Mount the chart on its section (`<details>`): returns the function that shows new data (null hides the section).
 * `open` and `toggled` keep the person's fold across the page being hidden and shown.
 */
export function mountChart(section: HTMLDetailsElement, open: boolean, toggled: (open: boolean) => void): (data: ChartData | null) => void {
    const caption = document.createElement('summary');
    caption.dataset.testid = 'chart-caption';
    const holder = document.createElement('div');
    holder.className = 'chart-holder';
    section.append(caption, holder);
    section.open = open;
    section.addEventListener('toggle', () => toggled(section.open));
    let data: ChartData | null = null;
    let drawnWidth = 0;

    const draw = (): void => {
        section.hidden = data === null;
        if (data === null) {
            holder.replaceChildren();
            return;
        }
        const width = Math.floor(holder.clientWidth);
        drawnWidth = width;
        const v = chart({ ...data, width: width > 0 ? width : 240, height: CHART_HEIGHT });
        caption.textContent = v.caption;
        const svg = el('svg', { width: v.width, height: v.height, viewBox: `0 0 ${v.width} ${v.height}`, role: 'img', 'aria-label': v.label }, 'chart');
        svg.dataset.points = String(v.dots.length);
        titled(svg, v.label);
        svg.appendChild(el('line', { x1: v.axis.left, y1: v.axis.y, x2: v.axis.right, y2: v.axis.y, class: 'chart-axis' }));
        for (const [level, kind] of [[v.window, 'window'], [v.threshold, 'threshold']] as const) {
            if (level === null) continue;
            svg.appendChild(titled(el('line', { x1: v.axis.left, y1: level.y, x2: v.axis.right, y2: level.y, class: `chart-${kind}` }, `chart-${kind}`), level.label));
            const label = el('text', { x: v.axis.right - 2, y: level.y < 14 ? level.y + 10 : level.y - 3, 'text-anchor': 'end', class: `chart-label chart-${kind}-label` });
            label.textContent = level.label;
            svg.appendChild(label);
        }
        for (const h of v.handoffs) {
            const mark = titled(el('line', { x1: h.x, y1: 2, x2: h.x, y2: v.axis.y, class: 'chart-handoff' }, 'chart-handoff'), h.title);
            mark.dataset.round = String(h.round);
            svg.appendChild(mark);
        }
        for (const d of v.segments) svg.appendChild(el('path', { d, class: 'chart-line' }, 'chart-line'));
        const r = v.dots.length <= 40 ? 2.5 : 1.5;
        for (const d of v.dots) {
            const dot = titled(el('circle', { cx: d.x, cy: d.y, r, class: 'chart-point' }, 'chart-point'), d.title);
            dot.dataset.round = String(d.round);
            dot.dataset.context = String(d.context);
            svg.appendChild(dot);
        }
        for (const [text, x, anchor] of [[v.axis.first, v.axis.left, 'start'], [v.axis.last, v.axis.right, 'end']] as const) {
            if (text === '') continue;
            const n = el('text', { x, y: v.axis.y + 11, 'text-anchor': v.axis.last === '' ? 'middle' : anchor, class: 'chart-label chart-round' });
            if (v.axis.last === '') n.setAttribute('x', String((v.axis.left + v.axis.right) / 2));
            n.textContent = text;
            svg.appendChild(n);
        }
        holder.replaceChildren(svg);
    };

    // The side bar's width changes as the person drags it: the drawing follows (no stretched text).
    new ResizeObserver(() => {
        if (data !== null && Math.floor(holder.clientWidth) !== drawnWidth) draw();
    }).observe(holder);
    section.addEventListener('toggle', () => {
        if (section.open && data !== null && Math.floor(holder.clientWidth) !== drawnWidth) draw();
    });

    return (next: ChartData | null): void => {
        data = next;
        draw();
    };
}
