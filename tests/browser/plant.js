#!/usr/bin/env node
// plant.js MODE IN.html OUT.html: write a copy of a report with one planted
// fault, for run_browser_test.sh to show that check_report.js catches it.
//
//   script-error   <script>window.fleetsimPlantedError();</script> before </body>
//   empty-plot     the first svg.plot gets data-points="0" and loses its
//                  circle.pt and path.line marks
//   nan            the first circle.pt gets cx="NaN" (or, with none, the first
//                  path.line's d gets a NaN)
//   external       an <img> loading http://fleetsim.invalid/x.png before </body>
//   hidden-plot    the first svg.plot is given display:none (empty box)
//
// Exits 1 when the page lacks what the mode changes (so a planted copy is
// never silently identical to its source), 2 on a usage error.
'use strict';

const fs = require('fs');

const [mode, input, output] = process.argv.slice(2);
if (!mode || !input || !output) {
  process.stderr.write('usage: plant.js script-error|empty-plot|nan|external|hidden-plot IN.html OUT.html\n');
  process.exit(2);
}
const html = fs.readFileSync(input, 'utf8');

function die(msg) {
  process.stderr.write(`plant.js ${mode}: ${msg} in ${input}\n`);
  process.exit(1);
}

// The first <svg ...class="...plot..."...>...</svg>, as [start, end).
function firstPlot(s) {
  const open = /<svg\b[^>]*\bclass\s*=\s*["'](?:[^"']*\s)?plot(?:\s[^"']*)?["'][^>]*>/i.exec(s);
  if (!open) die('no svg.plot');
  const end = s.indexOf('</svg>', open.index);
  if (end < 0) die('unterminated svg.plot');
  return [open.index, end + '</svg>'.length];
}

function beforeBodyEnd(s, snippet) {
  const i = s.lastIndexOf('</body>');
  if (i < 0) die('no </body>');
  return s.slice(0, i) + snippet + s.slice(i);
}

const markRe = (tag, cls) =>
  new RegExp(`<${tag}\\b[^>]*\\bclass\\s*=\\s*["'](?:[^"']*\\s)?${cls}(?:\\s[^"']*)?["'][^>]*?(?:/>|>[\\s\\S]*?</${tag}>)`, 'gi');

let out;
switch (mode) {
  case 'script-error':
    out = beforeBodyEnd(html, '<script>window.fleetsimPlantedError();</script>');
    break;
  case 'external':
    out = beforeBodyEnd(html, '<img src="http://fleetsim.invalid/x.png" alt="">');
    break;
  case 'empty-plot': {
    const [a, b] = firstPlot(html);
    let svg = html.slice(a, b);
    const before = svg;
    svg = svg.replace(/\bdata-points\s*=\s*["'][^"']*["']/i, 'data-points="0"');
    svg = svg.replace(markRe('circle', 'pt'), '').replace(markRe('path', 'line'), '');
    if (svg === before) die('nothing to empty in the first svg.plot');
    out = html.slice(0, a) + svg + html.slice(b);
    break;
  }
  case 'nan': {
    const [a, b] = firstPlot(html);
    let svg = html.slice(a, b);
    const before = svg;
    svg = svg.replace(/(<circle\b[^>]*\bclass\s*=\s*["'](?:[^"']*\s)?pt(?:\s[^"']*)?["'][^>]*?\bcx\s*=\s*["'])[^"']*/i,
                      '$1NaN');
    if (svg === before) {
      svg = svg.replace(/(<path\b[^>]*\bclass\s*=\s*["'](?:[^"']*\s)?line(?:\s[^"']*)?["'][^>]*?\bd\s*=\s*["'][^"']*?)(["'])/i,
                        '$1 L NaN,NaN$2');
    }
    if (svg === before) die('no circle.pt cx or path.line d in the first svg.plot');
    out = html.slice(0, a) + svg + html.slice(b);
    break;
  }
  case 'hidden-plot': {
    const [a] = firstPlot(html);
    if (!/^<svg\s/i.test(html.slice(a))) die('unexpected svg tag');
    out = html.slice(0, a) + '<svg style="display:none" ' + html.slice(a + '<svg '.length);
    break;
  }
  default:
    process.stderr.write(`plant.js: unknown mode ${mode}\n`);
    process.exit(2);
}
fs.writeFileSync(output, out);
