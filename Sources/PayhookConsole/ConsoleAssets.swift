/// The console's stylesheet and script, compiled into the binary and served from
/// `/console/console.css` and `/console/console.js`: no build step, no outside origin, and the
/// Content-Security-Policy can forbid inline script and style outright.
enum ConsoleAssets {
    static let css = """
        :root { --fg: #1d2330; --muted: #6b7280; --line: #e3e6eb; --bg: #f6f7f9; --card: #fff;
          --accent: #2358c4; --ok: #1b7f3b; --warn: #a86300; --bad: #b42318; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
          color: var(--fg); background: var(--bg); }
        header.top { display: flex; align-items: center; gap: 18px; padding: 8px 20px; background: #1d2330; color: #fff; }
        header.top a { color: #dfe6f5; text-decoration: none; }
        header.top a.current, header.top a:hover { color: #fff; text-decoration: underline; }
        header.top .brand { font-weight: 700; color: #fff; margin-right: 8px; }
        header.top nav { display: flex; gap: 16px; flex: 1; }
        header.top form { margin: 0; display: flex; gap: 8px; align-items: center; }
        header.top input[type=search] { width: 320px; padding: 4px 8px; border-radius: 4px; border: 0; }
        header.top .who { color: #aab4c8; font-size: 13px; }
        header.top button { background: transparent; color: #dfe6f5; border: 1px solid #56607a; }
        main { max-width: 1280px; margin: 0 auto; padding: 16px 20px 40px; }
        h1 { font-size: 20px; margin: 4px 0 14px; }
        h2 { font-size: 15px; margin: 16px 0 8px; }
        .card > h2:first-child, .card > form:first-child { margin-top: 0; }
        .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(360px, 1fr)); gap: 14px; }
        .card { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 12px 14px; margin-bottom: 14px; overflow-x: auto; }
        .figure { font-size: 26px; font-weight: 600; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { font-size: 12px; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); font-weight: 600; }
        td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
        td code, .age { white-space: nowrap; }
        .audit-details pre { max-height: 220px; margin: 0; }
        td.error { max-width: 420px; overflow-wrap: anywhere; }
        tr:hover td { background: #f9fafc; }
        .muted, .age { color: var(--muted); }
        .age { font-size: 12px; }
        time { white-space: nowrap; font-variant-numeric: tabular-nums; }
        code, pre { font: 12.5px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
        pre { background: #f3f4f7; border: 1px solid var(--line); border-radius: 4px; padding: 10px; overflow: auto;
          max-height: 480px; white-space: pre-wrap; overflow-wrap: anywhere; margin: 6px 0; }
        .badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 12px; background: #eef1f6; }
        .badge.open, .badge.failed, .badge.dead, .badge.discarded { background: #fde8e6; color: var(--bad); }
        .badge.replayed, .badge.ok, .badge.processed, .badge.succeeded { background: #e4f4e9; color: var(--ok); }
        .badge.waiting, .badge.pending { background: #fff2dc; color: var(--warn); }
        .flash { padding: 9px 12px; border-radius: 5px; margin-bottom: 14px; border: 1px solid; }
        .flash.ok { background: #e9f6ee; border-color: #a9d8b8; }
        .flash.error { background: #fdecea; border-color: #f2b3ad; }
        .flash.info { background: #eaf0fb; border-color: #b5c7ee; }
        form.filters { display: flex; flex-wrap: wrap; gap: 8px 12px; align-items: end; }
        form.filters label { display: flex; flex-direction: column; gap: 2px; font-size: 12px; color: var(--muted); }
        form.filters a { align-self: center; }
        input, select, textarea, button { font: inherit; }
        input[type=text], input[type=password], input[type=search], select, textarea {
          padding: 5px 8px; border: 1px solid #c9ced8; border-radius: 4px; background: #fff; }
        textarea { width: 100%; min-height: 54px; }
        button { padding: 5px 12px; border-radius: 4px; border: 1px solid #b9c0cc; background: #fff; cursor: pointer; }
        button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
        button.danger { background: #fff; border-color: var(--bad); color: var(--bad); }
        .actions { display: grid; grid-template-columns: repeat(auto-fit, minmax(240px, 1fr)); gap: 12px; align-items: start; }
        .actions form { border: 1px solid var(--line); border-radius: 6px; padding: 10px; background: #fbfbfd; }
        .actions p { margin: 0 0 8px; color: var(--muted); font-size: 13px; }
        dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
        dl.facts dt { color: var(--muted); }
        dl.facts dd { margin: 0; overflow-wrap: anywhere; }
        ol.timeline { list-style: none; margin: 0; padding: 0; }
        ol.timeline li { display: grid; grid-template-columns: 90px 310px 1fr; gap: 10px; padding: 5px 0;
          border-bottom: 1px dashed var(--line); }
        ol.timeline .stage { font-weight: 600; text-transform: capitalize; }
        ol.timeline li.failed .stage { color: var(--bad); }
        ol.timeline li.waiting .stage { color: var(--warn); }
        ol.timeline li.ok .stage { color: var(--ok); }
        .pager { display: flex; gap: 12px; align-items: center; margin-top: 10px; }
        .signin { max-width: 380px; margin: 80px auto; }
        .signin label { display: block; margin: 10px 0 4px; }
        .signin input { width: 100%; }
        .signin button { margin-top: 14px; width: 100%; }
        a { color: var(--accent); }
        figure.chart { margin: 0 0 12px; }
        figure.chart figcaption { display: flex; flex-wrap: wrap; gap: 4px 10px; align-items: baseline; margin-bottom: 4px; }
        .legend { display: inline-flex; flex-wrap: wrap; gap: 4px 12px; font-size: 12px; }
        .legend .key { display: inline-flex; align-items: center; gap: 4px; }
        svg.chart-plot { width: 100%; height: auto; max-height: 240px; display: block; }
        svg text { font-size: 11px; fill: var(--muted); }
        svg .axis-label { font-size: 11px; fill: var(--fg); }
        svg .grid { stroke: var(--line); stroke-width: 1; }
        svg .axis { stroke: #9aa3b2; stroke-width: 1; }
        svg .line { fill: none; stroke-width: 2; }
        svg .point { stroke: #fff; stroke-width: 1; }
        svg .bar.s0, svg .point.s0 { fill: #2358c4; } svg .line.s0 { stroke: #2358c4; }
        svg .bar.s1, svg .point.s1 { fill: #c2410c; } svg .line.s1 { stroke: #c2410c; }
        svg .bar.s2, svg .point.s2 { fill: #7c3aed; } svg .line.s2 { stroke: #7c3aed; }
        svg .bar.s3, svg .point.s3 { fill: #1b7f3b; } svg .line.s3 { stroke: #1b7f3b; }
        svg .bar.s4, svg .point.s4 { fill: #a16207; } svg .line.s4 { stroke: #a16207; }
        svg .bar.s5, svg .point.s5 { fill: #6b7280; } svg .line.s5 { stroke: #6b7280; }
        svg .bar:hover, svg .point:hover { opacity: .75; }
        details.chart-table summary { cursor: pointer; font-size: 12px; color: var(--muted); }
        details.chart-table table { margin-top: 4px; }
        details.chart-table td, details.chart-table th { padding: 2px 8px; font-size: 12px; }
        .windows { display: flex; gap: 8px; align-items: center; margin: 0 0 12px; }
        .windows a.current { font-weight: 700; color: var(--fg); text-decoration: none; }
        form.inline { display: flex; flex-wrap: wrap; gap: 4px; align-items: center; margin: 0; }
        form.inline input[type=text] { min-width: 200px; flex: 1; }
        .grid.wide { grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); }
        section.provider h2 { display: flex; gap: 10px; align-items: baseline; }
        .note { font-size: 12.5px; color: var(--muted); margin: 4px 0 0; }
        """

    /// A tab icon, so browsers do not ask the admin listener for `/favicon.ico` (401 there).
    static let icon = """
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1d2330"/>\
        <path d="M4 12V4h4.5a2.5 2.5 0 0 1 0 5H4" fill="none" stroke="#fff" stroke-width="2"/></svg>
        """

    /// Progressive enhancement only: every page works without it.
    static let javascript = """
        "use strict";
        // Keeps "(3 min ago)" current without reloading.
        (function () {
          function age(iso) {
            var s = Math.round((Date.now() - Date.parse(iso)) / 1000), m = Math.abs(s), a;
            if (m < 60) a = m + " s"; else if (m < 3600) a = Math.floor(m / 60) + " min";
            else if (m < 86400) a = Math.floor(m / 3600) + " h"; else a = Math.floor(m / 86400) + " d";
            return s >= 0 ? "(" + a + " ago)" : "(in " + a + ")";
          }
          function refresh() {
            var nodes = document.querySelectorAll("[data-age]");
            for (var i = 0; i < nodes.length; i++) nodes[i].textContent = age(nodes[i].getAttribute("data-age"));
          }
          setInterval(refresh, 15000);
          // "/" jumps to search, as in most consoles.
          document.addEventListener("keydown", function (event) {
            var target = event.target;
            if (event.key !== "/" || (target && /INPUT|TEXTAREA|SELECT/.test(target.tagName))) return;
            var box = document.querySelector("input[name=q]");
            if (box) { event.preventDefault(); box.focus(); }
          });
          // The overview refreshes itself every 30 s when the page asks for it.
          if (document.body.getAttribute("data-refresh")) {
            setTimeout(function () { location.reload(); }, 30000);
          }
        })();
        """
}
