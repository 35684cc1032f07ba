#!/usr/bin/env python
"""Open every page of the built site (`_docs/`) in headless Chromium and check it as a reader sees it.

    python tools/check_docs.py [--site _docs] [--shots _docs/_shots]

The site is served on 127.0.0.1; Debian's Chromium (`/usr/bin/chromium`, or `$CHROMIUM`) is driven
through the DevTools protocol (websocket-client), so no browser is downloaded. For each page:

- no console error, no uncaught exception, no failed or 4xx/5xx request;
- no request leaves 127.0.0.1 (MathJax, fonts and scripts are served by the site: no CDN);
- MathJax typeset every equation (each `.math` element holds an `mjx-container`) and no raw
  `$…$`, `\\(…\\)` or `\\[…\\]` is left in the text outside code;
- every `<img>` loaded (complete, with a non-zero natural width);
- every link to the site resolves: the file exists and its `#fragment` is an id of the target page.

Then, for the whole site: the sidebar lists the pages in nbdev's sidebar order; the search page finds
a word; screenshots of the landing page and of one algorithm page go to `_docs/_shots/`.
Exit status 1 if anything fails; the report is printed.
"""

from __future__ import annotations

import argparse, base64, functools, json, os, shutil, socket, subprocess, sys, tempfile, threading, time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-extensions',
    '--disable-default-apps',
    '--hide-scrollbars',
    '--mute-audio',
    '--remote-debugging-port=0',
    '--remote-allow-origins=*',
    '--window-size=1366,900',
]
# pages for the screenshot of an algorithm, best first (the first that exists is taken)
ALGORITHM_PAGES = ['yeojohnson', 'securefedyj', 'dpgbdt', 'gbdt', 'mvppca', 'dp', 'smc', 'federation']


def find_chromium() -> str | None:
    for c in (
        os.environ.get('CHROMIUM'),
        '/usr/bin/chromium',
        shutil.which('chromium'),
        shutil.which('chromium-browser'),
    ):
        if c and Path(c).exists():
            return c
    return None


# ------------------------------------------------------------------------------------------------
class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


class Server:
    "The site on http://127.0.0.1:<free port>/ in a background thread."

    def __init__(self, root: Path):
        self.httpd = ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(_Quiet, directory=str(root)))
        self.url = f'http://127.0.0.1:{self.httpd.server_address[1]}/'
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


# ------------------------------------------------------------------------------------------------
class CDPError(Exception):
    pass


class Browser:
    "Headless Chromium with one page, driven over the DevTools protocol."

    def __init__(self, executable: str, timeout: float = 30):
        import websocket  # websocket-client

        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix='fedgauss-chromium-')
        self.proc = subprocess.Popen(
            [executable, *CHROMIUM_FLAGS, f'--user-data-dir={self.profile}', 'about:blank'],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        port_file, t0 = Path(self.profile) / 'DevToolsActivePort', time.time()
        while not (port_file.exists() and len(port_file.read_text().split()) >= 2):
            if self.proc.poll() is not None:
                raise CDPError(f'chromium exited ({self.proc.returncode}): {self.proc.stderr.read().decode()[-2000:]}')
            if time.time() - t0 > timeout:
                raise CDPError('chromium did not open its DevTools port')
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        import urllib.request

        targets = json.loads(urllib.request.urlopen(f'http://127.0.0.1:{port}/json/list', timeout=timeout).read())
        page = next(t for t in targets if t['type'] == 'page')
        self.ws = websocket.create_connection(page['webSocketDebuggerUrl'], timeout=timeout, suppress_origin=True)
        self._id, self.events = 0, []
        for domain in ('Page', 'Runtime', 'Log', 'Network'):
            self.send(f'{domain}.enable')

    def send(self, method, **params):
        self._id += 1
        my = self._id
        self.ws.send(json.dumps({'id': my, 'method': method, 'params': params}))
        t0 = time.time()
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get('id') == my:
                if 'error' in msg:
                    raise CDPError(f'{method}: {msg["error"]}')
                return msg.get('result', {})
            if 'method' in msg:
                self.events.append(msg)
            if time.time() - t0 > self.timeout:
                raise CDPError(f'{method}: no answer')

    def wait_for(self, method, timeout=None):
        "Wait for an event (already received, or coming)."
        t0 = time.time()
        while True:
            for e in self.events:
                if e['method'] == method:
                    return e
            if time.time() - t0 > (timeout or self.timeout):
                raise CDPError(f'timeout waiting for {method}')
            self.ws.settimeout(max(0.05, (timeout or self.timeout) - (time.time() - t0)))
            try:
                msg = json.loads(self.ws.recv())
            except Exception:
                continue
            finally:
                self.ws.settimeout(self.timeout)
            if 'method' in msg:
                self.events.append(msg)

    def drain(self, seconds=0.2):
        "Collect the events that arrive in the next `seconds`."
        end = time.time() + seconds
        while (left := end - time.time()) > 0:
            self.ws.settimeout(left)
            try:
                msg = json.loads(self.ws.recv())
            except Exception:
                break
            if 'method' in msg:
                self.events.append(msg)
        self.ws.settimeout(self.timeout)

    def goto(self, url):
        self.events = []
        self.send('Page.navigate', url=url)
        self.wait_for('Page.loadEventFired')

    def js(self, expr, await_promise=True):
        r = self.send('Runtime.evaluate', expression=expr, awaitPromise=await_promise, returnByValue=True)
        if 'exceptionDetails' in r:
            raise CDPError(f'JS error: {r["exceptionDetails"]}')
        return r['result'].get('value')

    def screenshot(self, path: Path, max_height=6000):
        "PNG of the page, 1366 px wide, as tall as the page (at most `max_height`)."
        h = min(max_height, int(self.js('document.documentElement.scrollHeight')))
        self.send('Emulation.setDeviceMetricsOverride', width=1366, height=h, deviceScaleFactor=1, mobile=False)
        try:
            self.js('new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))')
            h = min(max_height, int(self.js('document.documentElement.scrollHeight')))
            png = self.send(
                'Page.captureScreenshot',
                format='png',
                captureBeyondViewport=True,
                clip={'x': 0, 'y': 0, 'width': 1366, 'height': h, 'scale': 1},
            )['data']
        finally:
            self.send('Emulation.clearDeviceMetricsOverride')
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(png))

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


# ------------------------------------------------------------------------------------------------
# what a page looks like to the reader, read in the browser
_INSPECT = r"""
(async () => {
  // MathJax is on the page only where Sphinx found math; wait for its first typeset
  const t0 = Date.now();
  const hasMath = document.querySelector('.math') !== null;
  let mathjax = 'absent';
  if (hasMath && !document.querySelector('script[src*="mathjax"]')) mathjax = 'not loaded';
  else if (hasMath) {
    while (!(window.MathJax && MathJax.startup && MathJax.startup.promise) && Date.now() - t0 < 20000)
      await new Promise(r => setTimeout(r, 50));
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      try { await MathJax.startup.promise; mathjax = 'done'; } catch (e) { mathjax = 'failed: ' + e; }
    } else mathjax = 'not loaded';
  }
  // let web fonts (MathJax's among them) and images finish
  await document.fonts.ready;
  await Promise.all([...document.images].map(im => im.complete ? null : new Promise(r => { im.onload = im.onerror = r; })));
  const math = [...document.querySelectorAll('.math')];
  const skip = 'pre, code, script, style, textarea, mjx-container, .highlight, .MathJax';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const raw = [];
  const re = /\$\$[^$]+\$\$|\$[^\s$][^$]*?\$|\\\(|\\\)|\\\[|\\\]/;
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.parentElement && n.parentElement.closest(skip)) continue;
    if (re.test(n.textContent)) raw.push(n.textContent.trim().slice(0, 120));
  }
  return {
    title: document.title,
    h1: [...document.querySelectorAll('article h1')].map(h => h.textContent.replace('#', '').trim()),
    headings: [...document.querySelectorAll('article h1, article h2, article h3')].map(h => h.textContent.replace(/#$/, '').trim()),
    mathjax: mathjax,
    math_total: math.length,
    math_typeset: math.filter(m => m.querySelector('mjx-container')).length,
    raw_math: raw,
    images: [...document.images].map(im => ({src: im.currentSrc || im.src, ok: im.complete && im.naturalWidth > 0})),
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id),
    sidebar: [...document.querySelectorAll('nav.bd-docs-nav a.reference')].map(a => ({text: a.textContent.trim(), href: a.href})),
    system_messages: document.querySelectorAll('.system-message, .problematic').length,
    text: document.querySelector('article') ? document.querySelector('article').innerText : '',
  };
})()
"""


# clipping: what the reader cannot see without scrolling sideways, at a given window width
CLIP_WIDTH = 1280
MIN_SCALE = 0.75
_CLIPPED = r"""
((MIN_SCALE) => {
  const col = document.querySelector('article.bd-article') || document.querySelector('article');
  if (!col) return {checked: 0, clipped: [], shrunk: [], no_alt: [], split_ops: [], wrapped: 0, column: 0};
  const colBox = col.getBoundingClientRect();
  const scrollParent = el => {
    for (let p = el.parentElement; p && p !== col.parentElement; p = p.parentElement)
      if (/(auto|scroll|hidden)/.test(getComputedStyle(p).overflowX)) return p;
    return null;
  };
  const near = el => {   // where on the page: the nearest heading above, and a bit of the element's own text
    let h = null;
    for (const x of col.querySelectorAll('h1, h2, h3')) {
      if (x.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) h = x; else break;
    }
    let tex = '';
    if (el.tagName === 'MJX-CONTAINER' && window.MathJax && MathJax.startup && MathJax.startup.document) {
      const item = MathJax.startup.document.getMathItemsWithin(el.parentElement).find(m => m.typesetRoot === el);
      if (item) tex = '$' + item.math.trim() + '$';
    }
    const own = el.tagName === 'IMG' ? (el.alt || el.getAttribute('src')) : (el.getAttribute('aria-label') || el.textContent || '');
    const text = (tex || own).replace(/\s+/g, ' ').trim().slice(0, 70);
    return [h ? h.textContent.replace(/#$/, '').trim().slice(0, 40) : '', text];
  };
  const where = el => { const [h, t] = near(el); return (h ? '§' + h + ': ' : '') + t; };
  const items = [...col.querySelectorAll('mjx-container')].map(e => ['math', e])
    .concat([...col.querySelectorAll('pre')].map(e => [e.closest('.cell_output, .output') ? 'output' : 'code', e]))
    .concat([...col.querySelectorAll('img')].map(e => ['image', e]));
  const clipped = [];
  let checked = 0;
  for (const [kind, el] of items) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;          // not displayed (a closed fold)
    checked++;
    const why = [];
    const ox = getComputedStyle(el).overflowX;
    if (ox !== 'visible' && el.scrollWidth > el.clientWidth + 1)
      why.push(`scrolls ${el.scrollWidth - el.clientWidth}px`);
    const sp = scrollParent(el);
    if (sp && sp.scrollWidth > sp.clientWidth + 1 && r.right > sp.getBoundingClientRect().right + 1)
      why.push(`cut by its ${sp.tagName.toLowerCase()}.${(sp.className || '').toString().split(' ')[0]} by ${Math.round(r.right - sp.getBoundingClientRect().right)}px`);
    if (r.right > colBox.right + 1) why.push(`${Math.round(r.right - colBox.right)}px beyond the column`);
    if (why.length) { const [section, what] = near(el); clipped.push({kind, section, what, why: why.join('; ')}); }
  }
  // pictures drawn wider than the column are shown scaled down: below 3/4 their labels get too small to read
  const shrunk = [...col.querySelectorAll('img')].filter(i => i.naturalWidth && i.getBoundingClientRect().width > 0
      && i.getBoundingClientRect().width < MIN_SCALE * i.naturalWidth)
    .map(i => ({kind: 'image', section: near(i)[0], what: near(i)[1], why: `shown at ${Math.round(100 * i.getBoundingClientRect().width / i.naturalWidth)}% of its ${i.naturalWidth}px`}));
  // pictures without a text alternative (Sphinx's default alt is the file name)
  const no_alt = [...col.querySelectorAll('img')].filter(i => !i.alt || /\.(png|svg|jpe?g|gif)$/i.test(i.alt.trim()))
    .map(i => where(i) + ' ' + i.getAttribute('src'));
  // an operator name read as a name and a number (`\operatorname{expm1}` -> "expm" "1")
  const split_ops = [...col.querySelectorAll('mjx-container mjx-texatom[texclass="OP"]')]
    .filter(t => t.querySelector(':scope > mjx-mi') && t.querySelector(':scope > mjx-mn')).map(t => where(t.closest('mjx-container')));
  // code and output lines longer than the column wrap (not clipped, but worth knowing)
  const wrapped = [...col.querySelectorAll('pre')].filter(p => {
    const r = p.getBoundingClientRect(); if (!r.height) return false;
    const cs = getComputedStyle(p), lh = parseFloat(cs.lineHeight) || 1.2 * parseFloat(cs.fontSize);
    const lines = p.textContent.replace(/\n$/, '').split('\n').length;
    return p.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom) > (lines + 0.5) * lh;
  }).length;
  return {checked, clipped, shrunk, no_alt, split_ops, wrapped, column: Math.round(colBox.width)};
})(MIN_SCALE_VALUE)
""".replace('MIN_SCALE_VALUE', str(MIN_SCALE))


def layout(b: Browser) -> dict:
    """What does not fit on the page now loaded in `b` (after `_INSPECT`): equations, code, outputs and
    pictures that scroll inside themselves, are cut by a scrolling or hiding ancestor, or end right of
    the content column ('clipped'); pictures shown below MIN_SCALE of their size ('shrunk'); pictures
    without alt text; operator names split into a name and a number; how many code blocks wrap."""
    b.js('new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))')
    return b.js(_CLIPPED)


def clipped_elements(b: Browser, url: str, width: int = CLIP_WIDTH) -> dict:
    "`layout` of the page at `url` in a window `width` px wide."
    b.send('Emulation.setDeviceMetricsOverride', width=width, height=900, deviceScaleFactor=1, mobile=False)
    try:
        b.goto(url)
        b.js(_INSPECT)  # MathJax done, fonts and images loaded
        return layout(b)
    finally:
        b.send('Emulation.clearDeviceMetricsOverride')


def _page_problems(b: Browser, base: str) -> list[str]:
    "Console errors, exceptions, failed requests and requests that leave the site."
    out = []
    for e in b.events:
        m, p = e['method'], e.get('params', {})
        if m == 'Runtime.consoleAPICalled' and p.get('type') in ('error', 'assert'):
            out.append(
                'console.error: ' + ' '.join(str(a.get('value', a.get('description', ''))) for a in p.get('args', []))
            )
        elif m == 'Runtime.exceptionThrown':
            d = p.get('exceptionDetails', {})
            out.append(f'uncaught exception: {d.get("exception", {}).get("description") or d.get("text")}')
        elif m == 'Log.entryAdded' and p['entry'].get('level') == 'error':
            out.append(
                f'console error ({p["entry"].get("source")}): {p["entry"].get("text")} {p["entry"].get("url", "")}'
            )
        elif m == 'Network.requestWillBeSent':
            url = p['request']['url']
            if not url.startswith((base, 'data:', 'blob:', 'about:')):
                out.append(f'request leaves the site: {url}')
        elif m == 'Network.responseReceived' and p['response'].get('status', 200) >= 400:
            out.append(f'HTTP {p["response"]["status"]}: {p["response"]["url"]}')
        elif m == 'Network.loadingFailed' and not p.get('canceled'):
            out.append(f'request failed: {p.get("errorText")} ({p.get("type")})')
    return out


def check_site(
    site: Path,
    shots: Path | None = None,
    chromium: str | None = None,
    search_word: str = 'partition',
    clip_width: int = CLIP_WIDTH,
) -> dict:
    """Check every page of `site`; returns {'pages': {page: info}, 'problems': [...], 'shots': [...]}.
    Each page's `info['layout']` says what does not fit in a window `clip_width` px wide (see `layout`):
    the caller decides what to accept; operator names split in two and pictures without alt text are problems."""
    chromium = chromium or find_chromium()
    if not chromium:
        raise CDPError('Chromium not found: install Debian\'s `chromium` (or set $CHROMIUM)')
    pages_meta = json.loads((site / '_pages.json').read_text()) if (site / '_pages.json').exists() else []
    html = sorted(
        p.relative_to(site).as_posix()
        for p in site.rglob('*.html')
        if not any(part.startswith('_') for part in p.relative_to(site).parts)
    )
    report, problems = {}, []
    with Server(site) as srv:
        b = Browser(chromium)
        try:
            # every page is read in a window `clip_width` px wide, where its layout is measured
            b.send(
                'Emulation.setDeviceMetricsOverride', width=clip_width, height=900, deviceScaleFactor=1, mobile=False
            )
            for rel in html:
                b.goto(srv.url + rel)
                info = b.js(_INSPECT)
                info['layout'] = layout(b)
                b.drain(0.1)
                info['problems'] = _page_problems(b, srv.url)
                report[rel] = info
            # search: Sphinx's index answers in the browser
            found, search_problems = [], ['no search page'] if not (site / 'search.html').exists() else []
            if not search_problems:
                b.goto(srv.url + f'search.html?q={search_word}')
                found = b.js(r"""(async () => { const t0 = Date.now();
                    while (Date.now() - t0 < 15000) {
                      const n = document.querySelectorAll('#search-results ul.search li').length;
                      if (n) return [...document.querySelectorAll('#search-results ul.search li a')].map(a => a.getAttribute('href'));
                      await new Promise(r => setTimeout(r, 100)); }
                    return []; })()""")
                b.drain(0.1)
                search_problems = _page_problems(b, srv.url)
            shot_files = []
            if shots:
                algo = next((f'{n}.html' for n in ALGORITHM_PAGES if f'{n}.html' in report), None)
                for rel in ['index.html'] + ([algo] if algo else []):
                    b.goto(srv.url + rel)
                    b.js(_INSPECT)
                    f = shots / rel.replace('.html', '.png')
                    b.screenshot(f)
                    shot_files.append(str(f))
        finally:
            b.close()

    # links: the file exists and the fragment is an id on that page
    ids = {rel: set(info['ids']) for rel, info in report.items()}
    for rel, info in report.items():
        p = info['problems']
        if info['mathjax'] not in ('absent', 'done'):
            p.append(f'MathJax: {info["mathjax"]}')
        if info['math_typeset'] != info['math_total']:
            p.append(f'MathJax typeset {info["math_typeset"]} of {info["math_total"]} equations')
        p += [f'raw TeX left in the text: {t!r}' for t in info['raw_math']]
        p += [f'image did not load: {im["src"]}' for im in info['images'] if not im['ok']]
        if info['system_messages']:
            p.append(f'{info["system_messages"]} docutils error messages on the page')
        p += [
            f'operator name read as a name and a number (use \\operatorname{{\\text{{..}}}}): {x}'
            for x in info['layout']['split_ops']
        ]
        p += [f'picture without alt text: {x}' for x in info['layout']['no_alt']]
        broken = set()
        for href in info['links']:
            if not href.startswith(srv.url):
                continue
            url, frag = urldefrag(href)
            target = unquote(urlsplit(url).path).lstrip('/') or 'index.html'
            if target.endswith('/'):
                target += 'index.html'
            if not (site / target).is_file():
                broken.add(f'{href} (no such file)')
            elif frag and target in ids and unquote(frag) not in ids[target]:
                broken.add(f'{href} (no id #{unquote(frag)})')
        p += [f'broken link: {x}' for x in sorted(broken)]
        problems += [f'{rel}: {x}' for x in p]
    if not found and not search_problems:
        problems.append(f'search.html: no result for {search_word!r}')
    problems += [f'search.html?q=: {x}' for x in search_problems]
    # sidebar: every page, in nbdev's order, on every page
    if pages_meta:
        want = [m['docname'] + '.html' for m in pages_meta if m['docname'] != 'index']
        missing = [d for d in [m['docname'] + '.html' for m in pages_meta] if d not in report]
        problems += [f'{d}: page missing from the site' for d in missing]
        for rel in ['index.html'] + want:
            if rel not in report:
                continue
            got = [unquote(urlsplit(s['href']).path).lstrip('/') for s in report[rel]['sidebar']]
            if got != want:
                problems.append(f'{rel}: sidebar lists {got}, expected {want} (nbs/sidebar.yml order)')
    return {'pages': report, 'problems': problems, 'search': found, 'shots': shot_files, 'base': srv.url}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--site', default=str(ROOT / '_docs'))
    p.add_argument('--shots', default=None, help='folder for screenshots (default: <site>/_shots)')
    a = p.parse_args(argv)
    site = Path(a.site)
    t0 = time.perf_counter()
    r = check_site(site, Path(a.shots) if a.shots else site / '_shots')
    for rel, info in r['pages'].items():
        print(
            f'{rel:28} math {info["math_typeset"]:3}/{info["math_total"]:<3} images {len(info["images"]):2} '
            f'links {len(info["links"]):4}  {"ok" if not info["problems"] else str(len(info["problems"])) + " problem(s)"}'
        )
    print(f'search: {len(r["search"])} results; screenshots: {", ".join(r["shots"])}; {time.perf_counter() - t0:.1f} s')
    for rel, info in r['pages'].items():
        for x in info['layout']['clipped'] + info['layout']['shrunk']:
            print(f'AT {CLIP_WIDTH}px {rel} §{x["section"]}: {x["kind"]} {x["why"]}: {x["what"]}')
    for x in r['problems']:
        print('PROBLEM', x)
    return 1 if r['problems'] else 0


if __name__ == '__main__':
    sys.exit(main())
