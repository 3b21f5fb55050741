#!/usr/bin/env python3
"""Renders report.html in headless Chromium and checks the page as laid out.

    check_html.py REPORT.html [--sections a,b,...] [--verdict TEXT]
                  [--verdict-has TEXT]... [--hang-missing N] [--text TEXT]...
                  [--max-rows N] [--keep DIR]

A copy of the report gets a small script (the report itself has none) that,
once the page is laid out, measures every SVG text: no two texts of one
SVG may overlap (axis ticks, legends, labels) and none may stick out of its
SVG (a cut caption).  It writes what it found into the page, and Chromium's
--dump-dom hands the page back.  Then: every section named is present, the
verdict starts with TEXT and holds each --verdict-has, N ranks are marked
missing in the hang drawings, each --text occurs in some SVG text, and at
most N rows of the collectives' tables show before a click.  The page must
fit a 1280 px window.  Exit 0 when all hold, 1 with the
reasons otherwise, 2 when Chromium gave nothing back.
"""
import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MEASURE = r"""
<script>
window.addEventListener('load', function () {
  var out = {sections: [], overlaps: [], clipped: [], texts: 0, svgs: 0,
             verdict: '', missing: [], svgtext: [],
             width: document.documentElement.scrollWidth, view: window.innerWidth};
  document.querySelectorAll('section[id]').forEach(function (s) { out.sections.push(s.id); });
  var v = document.getElementById('verdict');
  if (v) out.verdict = v.textContent.replace(/\s+/g, ' ').trim();
  function name(t) { return (t.getAttribute('class') || '') + ' "' + t.textContent + '"'; }
  document.querySelectorAll('svg').forEach(function (svg, si) {
    var box = svg.getBoundingClientRect(), ts = [];
    out.svgs++;
    svg.querySelectorAll('text').forEach(function (t) {
      var r = t.getBoundingClientRect();
      out.svgtext.push(t.textContent);
      if (r.width > 0 && r.height > 0) ts.push({t: t, r: r});
    });
    out.texts += ts.length;
    var where = (svg.closest('section') || {id: '?'}).id + ' svg ' + si;
    ts.forEach(function (a, i) {
      var r = a.r;
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5 ||
          r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)
        out.clipped.push(where + ': ' + name(a.t));
      for (var j = i + 1; j < ts.length; j++) {
        var q = ts[j].r;
        var w = Math.min(r.right, q.right) - Math.max(r.left, q.left);
        var h = Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top);
        if (w > 0.5 && h > 0.5)
          out.overlaps.push(where + ': ' + name(a.t) + ' / ' + name(ts[j].t));
      }
    });
  });
  out.rows = 0;
  document.querySelectorAll('#collectives tr').forEach(function (tr) {
    if (tr.querySelector('td') && tr.checkVisibility({contentVisibilityAuto: true,
                                                      visibilityProperty: true}))
      out.rows++;
  });
  document.querySelectorAll('.hang svg text.st').forEach(function (t) {
    if (/^rank /.test(t.textContent)) out.missing.push(t.textContent);
  });
  var pre = document.createElement('pre');
  pre.id = 'ng-measure';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def measure(report, keep=None):
    """The script's findings for report, or None if Chromium gave none."""
    with open(report, encoding="utf-8") as f:
        page = f.read()
    if "<script" in page:
        raise SystemExit("%s: the report has a script of its own" % report)
    tmp = tempfile.mkdtemp(prefix="ng-html-")
    try:
        copy = os.path.join(tmp, "page.html")
        with open(copy, "w", encoding="utf-8") as f:
            f.write(page.replace("</body>", MEASURE + "</body>", 1))
        cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars",
               "--user-data-dir=" + os.path.join(tmp, "profile"),
               "--window-size=1280,900", "--virtual-time-budget=5000",
               "--dump-dom", "file://" + copy]
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=120, check=False)
        dom = run.stdout.decode("utf-8", "replace")
        if keep:
            with open(os.path.join(keep, os.path.basename(report) + ".dom"), "w",
                      encoding="utf-8") as f:
                f.write(dom)
        m = re.search(r'<pre id="ng-measure">(.*?)</pre>', dom, re.S)
        if not m:
            sys.stderr.write(run.stderr.decode("utf-8", "replace")[-2000:])
            return None
        return json.loads(html.unescape(m.group(1)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--sections", default="")
    ap.add_argument("--verdict", default=None)
    ap.add_argument("--verdict-has", action="append", default=[])
    ap.add_argument("--hang-missing", type=int, default=None)
    ap.add_argument("--max-rows", type=int, default=None)
    ap.add_argument("--text", action="append", default=[])
    ap.add_argument("--keep", default=None)
    a = ap.parse_args()
    if not chromium():
        print("SKIP: chromium not installed")
        return 0
    m = measure(a.report, a.keep)
    if m is None:
        print("%s: Chromium returned no measurements" % a.report)
        return 2
    bad = []
    for s in filter(None, a.sections.split(",")):
        if s not in m["sections"]:
            bad.append("section #%s missing (have %s)" % (s, ",".join(m["sections"])))
    if a.verdict is not None and not m["verdict"].startswith(a.verdict):
        bad.append("verdict %r does not start with %r" % (m["verdict"][:120], a.verdict))
    for t in a.verdict_has:
        if t not in m["verdict"]:
            bad.append("verdict %r lacks %r" % (m["verdict"][:200], t))
    if a.max_rows is not None and m["rows"] > a.max_rows:
        bad.append("%d rows of the collectives' tables show, at most %d expected" %
                   (m["rows"], a.max_rows))
    if a.hang_missing is not None and len(m["missing"]) != a.hang_missing:
        bad.append("%d ranks marked missing in the hang drawings, expected %d: %s" %
                   (len(m["missing"]), a.hang_missing, m["missing"]))
    for t in a.text:
        if not any(t in s for s in m["svgtext"]):
            bad.append("no SVG text holds %r" % t)
    if not m["svgs"] or not m["texts"]:
        bad.append("no SVG text laid out (%d SVGs)" % m["svgs"])
    bad += ["overlapping text: " + o for o in m["overlaps"]]
    bad += ["text outside its SVG: " + c for c in m["clipped"]]
    if m["width"] > m["view"]:
        bad.append("the page is %d px wide in a %d px window" % (m["width"], m["view"]))
    for b in bad:
        print("%s: %s" % (a.report, b))
    if not bad:
        print("%s: %d sections, %d SVGs, %d texts laid out, none overlapping; %d table "
              "rows shown" % (a.report, len(m["sections"]), m["svgs"], m["texts"], m["rows"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
