/** The transcript page's HTML: strict CSP (`default-src 'none'`, a nonce, the webview's own source only). */

export interface PageParts {
    nonce: string;
    /** `webview.cspSource`. */
    cspSource: string;
    scriptUri: string;
    styleUri: string;
    lang: string;
    /** Localized labels. */
    toggleLabel: string;
    placeholder: string;
    /** The say box's placeholder where the whole one would not fit its lines (a narrow side bar, issue 34). */
    placeholderShort?: string;
    /** In an editor tab (the editor's background and a wider column), not the sidebar. */
    wide?: boolean;
}

/** The page; every interpolated value is escaped. */
export function pageHtml(p: PageParts): string {
    const e = escapeHtml;
    return `<!DOCTYPE html>
<html lang="${e(p.lang)}">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${e(p.cspSource)}; img-src ${e(p.cspSource)}; font-src ${e(p.cspSource)}; script-src 'nonce-${e(p.nonce)}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link href="${e(p.styleUri)}" rel="stylesheet">
<title>flower</title>
</head>
<body class="${p.wide === true ? 'wide' : 'narrow'}">
<div id="toolbar"><label><input type="checkbox" id="pruned-toggle"> ${e(p.toggleLabel)}</label></div>
<details id="chart" class="chart" data-testid="chart-section" hidden></details>
<div id="view-message" hidden></div>
<div id="rows" role="log" aria-live="polite"></div>
<div id="approvals" aria-live="assertive" hidden></div>
<form id="say-form"><textarea id="say-input" rows="2" placeholder="${e(p.placeholder)}" title="${e(p.placeholder)}" data-short="${e(p.placeholderShort ?? p.placeholder)}"></textarea></form>
<script nonce="${e(p.nonce)}" src="${e(p.scriptUri)}"></script>
</body>
</html>`;
}

export function escapeHtml(s: string): string {
    return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
