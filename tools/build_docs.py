#!/usr/bin/env python
"""Build the documentation site into `_docs/` without Quarto, offline, with one command.

    python tools/build_docs.py            # build; refresh README.md, nbs/sidebar.yml, nbs/nbdev.yml
    python tools/build_docs.py --check    # build; change no tracked file, fail if any of them is stale

Steps (each printed with its time):

1. README.md from `nbs/index.ipynb` (tools/make_readme.py), so the landing page and the README agree.
2. `nbdev_proc_nbs`: nbdev processes every notebook the way `nbdev_docs` does before Quarto renders
   (runs `show_doc`, adds API links, applies `#| hide`, `#| export`, `#| exporti`, front matter, ...)
   into `_proc/`. It installs Quarto with sudo unless a `quarto` is on PATH, so a shim that refuses
   to run is put on PATH for that call only; then `nbdev_sidebar` writes `nbs/sidebar.yml` as
   `nbdev_docs` would (the order of the pages).
3. The Quarto-only syntax is turned into MyST (front matter, `#| echo/output/include/code-fold/
   fig-cap/label`, `output: asis` outputs, callouts and other `:::` divs, link and heading
   attributes, `@fig-`/`@eq-`/`@sec-` cross-references, links to `*.ipynb` and to the doc host);
   the result goes to `_proc/_sphinx/`, one page per notebook named like Quarto's (`federation.html`).
4. MathJax 3 from the npm package `mathjax` (pinned in tools/docs/package-lock.json), installed
   with `npm ci` into `.cache/docs-npm/` (gitignored) and copied into the site: no CDN.
5. Sphinx + myst-nb + pydata-sphinx-theme (tools/docs/conf.py), committed outputs only (no
   execution), with `-W`: any warning fails the build.

The Quarto route is untouched: `nbdev_docs` still works wherever Quarto is installed.
"""

from __future__ import annotations

import argparse, fcntl, json, os, re, shutil, subprocess, sys, tempfile, time, warnings
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tools'))
import make_readme  # noqa: E402  (same folder: the README generator is reused, not duplicated)

sys.path.insert(0, str(ROOT / 'tools' / 'docs'))
from fedgauss_sphinx import pandoc_slug  # noqa: E402  (the heading ids the Sphinx site uses)

CONF_DIR = ROOT / 'tools' / 'docs'
PROC = ROOT / '_proc'
SRC = PROC / '_sphinx'
ASSETS = PROC / '_sphinx_assets'  # html_static_path: MathJax
EXTRA = PROC / '_sphinx_extra'  # html_extra_path: pictures that raw HTML refers to
DOCTREES = PROC / '_sphinx_doctrees'
HTML = PROC / '_sphinx_build' / 'html'  # myst-nb writes next to the output folder: build here, then move
NPM_CACHE = Path(os.environ.get('FEDGAUSS_DOCS_NPM_CACHE', ROOT / '.cache' / 'docs-npm'))
OUT = ROOT / '_docs'
# generated files that are committed: --check compares and restores them
TRACKED = ['README.md', 'nbs/sidebar.yml', 'nbs/nbdev.yml', 'fedgauss/_modidx.py']
# MathJax pieces the site needs: the combined TeX+MathML -> CommonHTML component, the TeX extensions it
# autoloads (\require, \boldsymbol, \cancel, ...), the CHTML fonts, the menu's lazy parts and speech.
MATHJAX_PARTS = ['tex-mml-chtml.js', 'input/tex/extensions', 'output/chtml', 'a11y', 'ui', 'sre', 'adaptors']


class BuildError(Exception):
    pass


def _log(msg):
    print(msg, flush=True)


@contextmanager
def _step(name):
    t = time.perf_counter()
    _log(f'== {name}')
    yield
    _log(f'   {time.perf_counter() - t:.1f} s')


def _run(cmd, env=None, cwd=ROOT, what=None):
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise BuildError(f'{what or cmd[0]} failed (exit {r.returncode}):\n{r.stdout[-4000:]}\n{r.stderr[-8000:]}')
    return r


def _cfg():
    import configparser

    c = configparser.ConfigParser()
    c.read(ROOT / 'settings.ini')
    return c['DEFAULT']


# ------------------------------------------------------------------------------------------------
# 2. nbdev
# ------------------------------------------------------------------------------------------------
_QUARTO_SHIM = '''#!/bin/sh
echo "quarto shim from tools/build_docs.py: this build renders with Sphinx; install Quarto to use nbdev_docs" >&2
exit 1
'''
_MIXED_IMPORTS_HINT = (
    'nbdev executes every cell that contains an import when it renders the docs (see the nbdev FAQ, '
    '"Found cells containing imports and other code"): put imports in a cell of their own.'
)


def _explain_nbdev_failure(stderr: str) -> str:
    "The notebook, the cell and the error out of nbdev's nested tracebacks, with a hint for the usual cause."
    where = stderr.rfind('Exception: Error in notebook')
    if where < 0:
        return '\n'.join(stderr.strip().splitlines()[-25:])
    cell = stderr[where + len('Exception: ') :].strip()
    causes = re.findall(r'^(\w+(?:Error|Exception|Exit)\b.*)$', stderr[:where], re.M)
    msg = cell + (f'\n\n{causes[0]}' if causes else '')
    src = cell.split(':', 1)[-1]
    if re.search(r'^\s*(import|from\s+\S+\s+import)\s', src, re.M) and [
        l for l in src.splitlines() if l.strip() and not re.match(r'\s*(import|from\s+\S+\s+import)\s|\s*#', l)
    ]:
        msg += '\n\n' + _MIXED_IMPORTS_HINT
    return msg


def _tool(name):
    "A console script of this environment (next to its python), else the one on PATH."
    p = Path(sys.executable).parent / name
    if p.exists():
        return str(p)
    if found := shutil.which(name):
        return found
    raise BuildError(f'`{name}` not found: install the dev tools (pip install -e ".[dev]")')


def mixed_import_cells(nbs_dir: Path) -> list[str]:
    """Code cells that nbdev runs whole when it renders the docs because they hold an import next to
    other code (cells that are exported, or that call nbdev_export, are run anyway and are not listed).
    nbdev runs cells only in notebooks that document something (an exported cell or a show_doc call)."""
    import ast

    found = []
    for p in sorted(nbs_dir.rglob('*.ipynb')):
        if any(part.startswith(('_', '.')) for part in p.relative_to(nbs_dir).parts):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            nb = nbformat.read(p, as_version=4)
        if not any(
            c.cell_type == 'code' and (re.search(r'^\s*#\s*\|\s*export', c.source, re.M) or 'show_doc(' in c.source)
            for c in nb.cells
        ):
            continue
        for i, c in enumerate(nb.cells):
            if c.cell_type != 'code' or 'nbdev_export()' in c.source:
                continue
            d, code = split_directives(c.source)
            if d.keys() & {'export', 'exporti', 'exports', 'exec_doc'} or _false(d.get('eval', True)):
                continue
            try:
                tree = ast.parse('\n'.join(l for l in code.splitlines() if not l.lstrip().startswith(('%', '!'))))
            except SyntaxError:
                continue
            nodes = list(ast.walk(tree))
            if any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in nodes) and any(
                isinstance(n, (ast.Expr, ast.Assign)) for n in nodes
            ):
                found.append(f'{p.relative_to(ROOT)} cell {i}')
    return found


def nbdev_process():
    "Run `nbdev_proc_nbs` (with a Quarto shim on PATH if no Quarto is installed) then `nbdev_sidebar`."
    bindir = Path(sys.executable).parent
    env = dict(os.environ, PATH=f'{bindir}{os.pathsep}{os.environ.get("PATH", "")}', MPLBACKEND='Agg')
    with tempfile.TemporaryDirectory() as shim:
        if not shutil.which('quarto', path=env['PATH']):
            q = Path(shim) / 'quarto'
            q.write_text(_QUARTO_SHIM)
            q.chmod(0o755)
            env['PATH'] = f'{shim}{os.pathsep}{env["PATH"]}'
        if PROC.exists():
            shutil.rmtree(PROC)
        r = subprocess.run([_tool('nbdev_proc_nbs'), '--force'], cwd=ROOT, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise BuildError('nbdev_proc_nbs failed: ' + _explain_nbdev_failure(r.stderr))
    # nbdev_proc_nbs passes its own file globs on to nbdev_sidebar, which then lists every file of nbs/
    # (yml, css); nbdev_docs does not: write the sidebar as nbdev_docs does.
    _run([_tool('nbdev_sidebar')], env=env, what='nbdev_sidebar')
    shutil.copy2(ROOT / 'nbs' / 'sidebar.yml', PROC / 'sidebar.yml')


def sidebar_pages():
    """The pages in nbdev's sidebar order: a list of (section or None, path relative to nbs/)."""
    sb = yaml.safe_load((ROOT / 'nbs' / 'sidebar.yml').read_text())['website']['sidebar']['contents']
    out = []

    def walk(items, section):
        for it in items:
            if isinstance(it, str):
                out.append((section, it))
            elif isinstance(it, dict):
                if it.get('href'):
                    out.append((it.get('section'), it['href']))
                walk(it.get('contents', []), it.get('section'))

    walk(sb, None)
    return [(s, p) for s, p in out if Path(p).suffix in ('.ipynb', '.qmd', '.md')]


# ------------------------------------------------------------------------------------------------
# 3. Quarto -> MyST
# ------------------------------------------------------------------------------------------------
_FENCE = re.compile(r'^(\s*)(`{3,}|~{3,})')


def _closes(line: str, fence: str) -> bool:
    "Does `line` close the code fence opened by `fence` (same character, at least as long, nothing after)?"
    m = _FENCE.match(line)
    return (
        bool(m)
        and m.group(2)[0] == fence[0]
        and len(m.group(2)) >= len(fence)
        and not line.strip()[len(m.group(2)) :].strip()
    )


_DIV_OPEN = re.compile(r'^(:{3,})\s*(?:\{(?P<attrs>[^}]*)\}|(?P<cls>[A-Za-z][\w-]*))\s*$')
_DIV_CLOSE = re.compile(r'^:{3,}\s*$')
_HEADING_ATTRS = re.compile(r'^(#{1,6}\s+.*?)\s*\{(?P<attrs>[^{}]*)\}\s*$')
_CODE_SPAN = re.compile(r'(`+)(?!`).*?(?<!`)\1(?!`)', re.S)
_CROSSREF = re.compile(
    r'(?<![\w@./-])(?P<neg>-?)@(?P<kind>fig|tbl|eq|sec|lst)-(?P<name>[A-Za-z0-9_][\w-]*\w|[A-Za-z0-9_])'
)
_EQ_LABEL = re.compile(r'\$\$\s*\{#(eq-[\w-]+)\}')
_LINK_ATTRS = re.compile(r'\]\((?P<url>[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?P<title>\s+"[^"]*")?\)\{(?P<attrs>[^{}]*)\}')
_LINK = re.compile(r'(?<!\!)\]\((?P<url>[^()\s]+)(?P<title>\s+"[^"]*")?\)')
_FIGURE_LINE = re.compile(r'^!\[(?P<cap>.*)\]\((?P<src>[^()\s]+)\)\{(?P<attrs>[^{}]*#fig-[^{}]*)\}\s*$', re.M)
_CALLOUT_TYPES = {'note': 'note', 'tip': 'tip', 'warning': 'warning', 'important': 'important', 'caution': 'caution'}
_ATTR_TOKEN = re.compile(
    r'''(?P<key>[\w-]+)=(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>\S+))|(?P<cls>\.[\w-]+)|(?P<id>#[\w-]+)'''
)


def parse_attrs(s: str) -> tuple[str | None, list[str], dict]:
    "Pandoc attributes `{#id .class key=val}` as (id, classes, key-values)."
    ident, classes, kv = None, [], {}
    for m in _ATTR_TOKEN.finditer(s):
        if m['cls']:
            classes.append(m['cls'][1:])
        elif m['id']:
            ident = m['id'][1:]
        else:
            kv[m['key']] = m['dq'] if m['dq'] is not None else m['sq'] if m['sq'] is not None else m['bare']
    return ident, classes, kv


class Site:
    "What the converter knows about the whole site: page names and the labels defined anywhere."

    def __init__(self, pages: dict[str, str], base_url: str):
        self.pages = pages  # 'sub/00_federation.ipynb' -> 'sub/federation' (docname)
        self.base_url = base_url.rstrip('/') + '/'
        self.labels: dict[str, int | None] = {}  # label -> its figure number on its page (Quarto's numbering)
        self.anchors: dict[str, set[str]] = {}  # docname -> heading ids (show_doc entries included)

    def nbdev_anchor(self, doc: str, frag: str) -> str:
        """nbdev links every name of _modidx, methods too (`#rdpaccountant.add_gaussian`), but only what
        show_doc documents has a heading: point a link to an undocumented method at its class, else at the page."""
        known = self.anchors.get(doc)
        if not frag or known is None or frag in known:
            return frag
        while '.' in frag:
            frag = frag.rsplit('.', 1)[0]
            if frag in known:
                return frag
        return ''

    def href(self, docname_from: str, target_doc: str, frag: str = '') -> str:
        up = '../' * docname_from.count('/')
        return f'{up}{target_doc}.html' + (f'#{frag}' if frag else '')

    def rewrite_url(self, url: str, docname: str) -> str:
        """Links to the doc host, to notebooks (`00_federation.ipynb#iid`) or to Quarto's page names
        (`federation.html`) become relative links to the pages of this site."""
        if url.startswith(self.base_url):
            path, _, frag = url[len(self.base_url) :].partition('#')
            target = path or 'index.html'
            if target.endswith('/'):
                target += 'index.html'
            doc = re.sub(r'\.html$', '', target)
            return self.href(docname, doc, self.nbdev_anchor(doc, frag))
        if re.match(r'^[a-zA-Z][\w+.-]*:', url) or url.startswith(('#', '/')):
            return url
        path, _, frag = url.partition('#')
        here = next((Path(nb).parent for nb, doc in self.pages.items() if doc == docname), Path(docname).parent)
        target = os.path.normpath(here / unquote(path))
        for nb, doc in self.pages.items():
            if target in (os.path.normpath(nb), doc + '.html'):
                return self.href(docname, doc, frag)
        return url


def _protect_code_spans(text):
    spans = []

    def keep(m):
        spans.append(m.group(0))
        return f'\x00{len(spans) - 1}\x00'

    return _CODE_SPAN.sub(keep, text), spans


def _restore(text, spans):
    return re.sub(r'\x00(\d+)\x00', lambda m: spans[int(m.group(1))], text)


def _convert_inline(text: str, site: Site, docname: str) -> str:
    "Link/image attributes, links to other pages and cross-references in one line of markdown."
    # nbdev links every backticked name found in _modidx, private ones too (`_` is a singledispatch
    # registration): show_doc never documents those, so such a link has no target. Keep the code only.
    text = re.sub(
        r'\[(`+)([^`]*?)\1\]\(' + re.escape(site.base_url) + r'[^)#]*#([^)]*)\)',
        lambda m: m.group(1) + m.group(2) + m.group(1) if m.group(3).split('.')[-1].startswith('_') else m.group(0),
        text,
    )
    text, spans = _protect_code_spans(text)

    def link_attrs(m):
        # is this the end of an image (`![..](..){..}`)? find the `[` that opens the link text
        depth, i = 0, m.start()
        while i >= 0:
            ch = text[i]
            if ch == ']':
                depth += 1
            elif ch == '[':
                depth -= 1
                if depth == 0:
                    break
            i -= 1
        is_image = i > 0 and text[i - 1] == '!'
        ident, classes, kv = parse_attrs(m['attrs'])
        keep = []
        if ident:
            keep.append(f'#{ident}')
        keep += [f'.{c}' for c in classes]
        if 'float:right' in kv.get('style', '').replace(' ', ''):
            keep.append('.fg-float-right')
        if is_image:
            keep += [f'{k}="{kv[k]}"' for k in ('width', 'height') if k in kv]
        url = m['url'] if is_image else site.rewrite_url(m['url'], docname)
        return f']({url}{m["title"] or ""})' + (f'{{{" ".join(keep)}}}' if keep else '')

    text = _LINK_ATTRS.sub(link_attrs, text)
    text = _LINK.sub(lambda m: f']({site.rewrite_url(m["url"], docname)}{m["title"] or ""})', text)

    def xref(m):
        label = f'{m["kind"]}-{m["name"]}'
        if label not in site.labels:
            return m.group(0)
        if m['kind'] == 'eq':
            return f'{{eq}}`{label}`'
        if m['kind'] == 'fig':
            return f'{{ref}}`Figure {site.labels[label]} <{label}>`'
        return f'{{ref}}`{label}`'

    text = _CROSSREF.sub(xref, text)
    return _restore(text, spans)


def convert_markdown(src: str, site: Site, docname: str, asis: bool = False) -> str:
    """Quarto markdown -> MyST: callouts and divs, heading attributes, equation labels, inline syntax.
    Fenced code blocks are left alone."""
    lines = src.split('\n')
    # pass 1: find div fences (outside code) and pair them
    fence, divs, stack = None, {}, []
    for i, line in enumerate(lines):
        fm = _FENCE.match(line)
        if fence:
            if _closes(line, fence):
                fence = None
            continue
        if fm:
            fence = fm.group(2)
            continue
        if m := _DIV_OPEN.match(line):
            attrs = m['attrs'] if m['attrs'] is not None else '.' + m['cls']
            stack.append(i)
            divs[i] = {'attrs': attrs, 'close': None, 'children': []}
            if len(stack) > 1:
                divs[stack[-2]]['children'].append(i)
        elif _DIV_CLOSE.match(line) and stack:
            divs[stack.pop()]['close'] = i
    for i in stack:
        divs.pop(i)  # unclosed: leave the text as it is
    opens = {i: d for i, d in divs.items() if d['close'] is not None}

    def kind(d):
        _, classes, kv = parse_attrs(d['attrs'])
        for c in classes:
            if c.startswith('callout-') and c[8:] in _CALLOUT_TYPES:
                return _CALLOUT_TYPES[c[8:]], kv
        return None, kv

    def height(i):
        kids = [height(k) for k in opens[i]['children'] if k in opens]
        own = 1 if kind(opens[i])[0] else 0
        return own + (max(kids) if kids else 0)

    out, fence, closes, skip = [], None, {}, set()
    for i, line in enumerate(lines):
        if i in skip:
            continue
        fm = _FENCE.match(line)
        if fence:
            out.append(line)
            if _closes(line, fence):
                fence = None
            continue
        if fm:
            fence = fm.group(2)
            out.append(line)
            continue
        if i in opens:
            d = opens[i]
            typ, kv = kind(d)
            if typ is None:  # layout div (columns, margins, panels, figures): keep its content
                closes[d['close']] = None
                continue
            colons = ':' * (2 + height(i))
            title = kv.get('title')
            if title is None:  # Quarto takes the callout's title from a first heading
                j = i + 1
                while j < d['close'] and not lines[j].strip():
                    j += 1
                if j < d['close'] and (hm := re.match(r'^#{1,6}\s+(.*?)\s*$', lines[j])):
                    title = hm.group(1)
                    skip.add(j)
            if title:
                out += [
                    f'{colons}{{admonition}} {_convert_inline(title, site, docname)}',
                    f':class: {typ} callout-{typ}',
                ]
            else:
                out += [f'{colons}{{{typ}}}', f':class: callout-{typ}']
            closes[d['close']] = colons
            continue
        if i in closes:
            if closes[i]:
                out.append(closes[i])
            continue
        if fm := _FIGURE_LINE.match(line):  # a picture with a #fig- label is a figure, as in Quarto
            ident, _, kv = parse_attrs(fm['attrs'])
            out += [
                f':::{{figure}} {fm["src"]}',
                f':name: {ident}',
                f':alt: {kv.get("fig-alt") or plain_text(fm["cap"])}',
            ]
            out += [f':{k}: {kv[k]}' for k in ('width', 'height') if k in kv]
            out += [
                '',
                (f'Figure {site.labels[ident]}: ' if ident in site.labels else '')
                + _convert_inline(fm['cap'], site, docname),
                ':::',
            ]
            continue
        if (hm := _HEADING_ATTRS.match(line)) and not line.rstrip().endswith('$}'):
            ident, _, _ = parse_attrs(hm['attrs'])
            if ident:
                out += [f'({ident})=']
            line = hm.group(1)
        if asis and line.strip() == '---' and not any(l.strip() for l in out):
            continue  # show_doc's leading rule: the CSS draws it
        out.append(_convert_inline(line, site, docname))
    text = '\n'.join(out)
    text = _EQ_LABEL.sub(lambda m: f'$$ ({m.group(1)})', text)
    return text


def collect_labels(cell) -> list[str]:
    """Labels a cell defines that `@` references may point to, in order: `{#sec-x}` on a heading, `{#eq-x}`
    after display math, `{#fig-x}` on a picture, `#| label: fig-x` on a code cell with a `fig-cap`."""
    if cell.cell_type == 'code':
        d, _ = split_directives(cell.source)
        lab = str(d.get('label', ''))
        return [lab] if lab.startswith('fig-') and d.get('fig-cap') else []
    return (
        re.findall(r'^#{1,6}\s.*\{[^}]*#(sec-[\w-]+)[^}]*\}\s*$', cell.source, re.M)
        + re.findall(r'\$\$\s*\{#(eq-[\w-]+)\}', cell.source)
        + [x.group(1) for f in _FIGURE_LINE.finditer(cell.source) if (x := re.search(r'#(fig-[\w-]+)', f['attrs']))]
    )


_DIRECTIVE = re.compile(r'^\s*#\s*\|\s*([\w-]+)\s*:?\s*(.*?)\s*$')


def split_directives(source: str) -> tuple[dict, str]:
    "Leading `#|` lines of a code cell (Quarto and nbdev style) as a dict, and the code without them."
    lines, d = source.split('\n'), {}
    i = 0
    while i < len(lines) and (m := _DIRECTIVE.match(lines[i])):
        key, val = m.group(1), m.group(2)
        if val:
            try:
                val = yaml.safe_load(val)
            except yaml.YAMLError:
                pass
        else:
            val = True
        d[key] = val
        i += 1
    return d, '\n'.join(lines[i:]).strip('\n')


def _false(v):
    return v is False or str(v).lower() == 'false'


def _asis_markdown(cell) -> str:
    parts = []
    for o in cell.get('outputs', []):
        if o.get('output_type') == 'stream' and o.get('name') == 'stdout':
            parts.append(o.get('text', ''))
        elif 'data' in o:
            data = o['data']
            if 'text/markdown' in data:
                parts.append(data['text/markdown'])
            elif 'text/html' in data:
                parts.append(data['text/html'])
            elif 'text/plain' in data:
                parts.append(data['text/plain'])
    return '\n\n'.join(p if isinstance(p, str) else ''.join(p) for p in parts)


_DROP_MIME = ('application/vnd.jupyter.widget-view+json', 'application/vnd.jupyter.widget-state+json')


def plain_text(md_text: str) -> str:
    "Markdown (with TeX) as one line of plain text, for an image's alt text: no `$`, backticks, emphasis or link targets."
    t = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', str(md_text))
    t = re.sub(r'(?<!\w)_([^_]+)_(?!\w)', r'\1', re.sub(r'[`*#>]+', '', t))
    t = re.sub(
        r'\$+([^$]*)\$+',
        lambda m: (
            re.sub(
                r'\\([A-Za-z]+)\s*',
                r'\1',
                re.sub(r'\\(?:mathrm|text|operatorname|mathbf|boldsymbol)\{([^}]*)\}', r'\1', m.group(1)),
            )
            .replace('{', '')
            .replace('}', '')
        ),
        t,
    )
    return ' '.join(t.split())


def _image_alt(d: dict, previous_markdown: str) -> str | None:
    """The alt text of a code cell's pictures: its `fig-alt`, else its `fig-cap`, else the heading of the
    markdown cell just above it (what the reader was told the picture shows)."""
    if d.get('fig-alt'):
        return str(d['fig-alt'])
    cap = d.get('fig-cap')
    if cap:
        return plain_text(' '.join(map(str, cap)) if isinstance(cap, list) else cap)
    lines = [l for l in previous_markdown.splitlines() if l.strip()]
    heads = [l for l in lines if l.lstrip().startswith('#')]
    return plain_text((heads or lines)[-1 if heads else 0]) if lines else None


def convert_notebook(nb, site: Site, docname: str, title: str | None, description: str | None):
    cells = []
    previous_markdown = ''
    md = lambda s: nbformat.v4.new_markdown_cell(s)
    head = []
    if title:
        head.append(f'# {_convert_inline(title, site, docname)}')
    if description:
        head.append('> ' + _convert_inline(' '.join(description.split()), site, docname))
    if head:
        cells.append(md('\n\n'.join(head)))
    for c in nb.cells:
        if c.cell_type == 'raw':
            fmt = c.metadata.get('raw_mimetype', '') or c.metadata.get('format', '')
            if 'html' in fmt or 'markdown' in fmt:
                cells.append(md(convert_markdown(c.source, site, docname)))
            continue
        if c.cell_type == 'markdown':
            if c.source.strip() == '<!-- WARNING: THIS FILE WAS AUTOGENERATED! DO NOT EDIT! -->':
                continue
            cells.append(md(convert_markdown(c.source, site, docname)))
            previous_markdown = c.source
            continue
        d, code = split_directives(c.source)
        if _false(d.get('include', True)):
            continue
        outputs = [o for o in c.get('outputs', [])]
        if _false(d.get('warning', True)) or _false(d.get('message', True)):
            outputs = [o for o in outputs if not (o.get('output_type') == 'stream' and o.get('name') == 'stderr')]
        for o in outputs:
            for k in _DROP_MIME:
                if 'data' in o and k in o['data']:
                    del o['data'][k]
        outputs = [o for o in outputs if 'data' not in o or o['data']]
        echo = not _false(d.get('echo', True))
        if str(d.get('output', '')).lower() == 'asis':
            if echo and code:
                cells.append(nbformat.v4.new_code_cell(code, metadata={'language': 'python'}))
            text = _asis_markdown(dict(c, outputs=outputs))
            if text.strip():
                text = convert_markdown(text, site, docname, asis=True)
                cells.append(md(text))
            continue
        tags, meta = [], {}
        if not echo:
            tags.append('remove-input')
        if _false(d.get('output', True)):
            outputs = []
        fold = d.get('code-fold')
        if fold and not _false(fold) and echo:
            tags.append('hide-input')
            if str(fold).lower() == 'show':
                tags.append('fg-fold-open')
            if d.get('code-summary'):
                meta.setdefault('mystnb', {})['code_prompt_show'] = str(d['code-summary'])
            meta.setdefault('mystnb', {})['code_prompt_hide'] = 'Hide code'
        if d.get('fig-cap') or str(d.get('label', '')).startswith('fig-'):
            fig = {}
            if d.get('fig-cap'):
                lab, cap = str(d.get('label', '')), d['fig-cap']
                cap = ' '.join(map(str, cap)) if isinstance(cap, list) else str(cap)
                fig['caption'] = (f'Figure {site.labels[lab]}: ' if lab in site.labels else '') + _convert_inline(
                    cap, site, docname
                )
            if str(d.get('label', '')).startswith('fig-'):
                fig['name'] = d['label']
            if 'caption' in fig:
                meta.setdefault('mystnb', {})['figure'] = fig
            elif 'name' in fig:
                meta.setdefault('mystnb', {})['image'] = {'name': fig['name']}
        if any('image/png' in o.get('data', {}) or 'image/svg+xml' in o.get('data', {}) for o in outputs) and (
            alt := _image_alt(d, previous_markdown)
        ):
            meta.setdefault('mystnb', {}).setdefault('image', {})['alt'] = alt
        if not code and not outputs:
            continue
        if not code:
            tags.append('remove-input')
        if tags:
            meta['tags'] = tags
        cell = nbformat.v4.new_code_cell(code, metadata=meta)
        cell.outputs = outputs
        cell.execution_count = c.get('execution_count')
        cells.append(cell)
        if d.get('tbl-cap') and outputs:  # Quarto's table caption, under the table
            cells.append(md('*' + _convert_inline(str(d['tbl-cap']), site, docname) + '*'))
    new = nbformat.v4.new_notebook(cells=cells)
    new.metadata = {
        'kernelspec': nb.metadata.get(
            'kernelspec', {'name': 'python3', 'display_name': 'Python 3', 'language': 'python'}
        ),
        'language_info': {'name': 'python', 'pygments_lexer': 'ipython3'},
    }
    for i, c in enumerate(new.cells):
        c['id'] = f'cell-{i}'  # stable ids: the same notebook gives the same site
    return new


def _frontmatter(nb):
    "Front matter that nbdev put in the first raw cell (title, description, output-file, ...)."
    if nb.cells and nb.cells[0].cell_type == 'raw' and nb.cells[0].source.lstrip().startswith('---'):
        fm = yaml.safe_load(nb.cells[0].source.strip().strip('-')) or {}
        nb.cells = nb.cells[1:]
        return fm
    return {}


def _qmd_to_nb(path: Path):
    "A `.qmd`/`.md` page: front matter and markdown (code chunks shown, not run)."
    text = path.read_text()
    fm = {}
    if text.startswith('---'):
        _, y, text = text.split('---', 2)
        fm = yaml.safe_load(y) or {}
    text = re.sub(r'^```\{(\w+)[^}]*\}', r'```\1', text, flags=re.M)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])
    return nb, fm


def _heading_ids(nb) -> set[str]:
    "Ids of the headings of a processed notebook: its markdown cells and the `output: asis` (show_doc) outputs."
    texts = [c.source for c in nb.cells if c.cell_type == 'markdown']
    texts += [_asis_markdown(c) for c in nb.cells if c.cell_type == 'code' and 'output: asis' in c.source]
    ids = set()
    for t in texts:
        for m in re.finditer(r'^#{1,6}\s+(.*?)\s*(?:\{[^{}]*\})?\s*$', t, re.M):
            title = re.sub(r'`([^`]*)`', r'\1', m.group(1))
            ids.add(pandoc_slug(title))
    return ids


def docname_for(rel: str, fm: dict) -> str:
    "The page name Quarto gives a notebook: its `output-file` (nbdev sets it), else the file name."
    rel = Path(rel)
    if Path(rel.stem).name == 'index' or rel.stem == 'index':
        return str(rel.with_suffix(''))
    out = fm.get('output-file')
    name = Path(out).stem if out else rel.stem
    return str(rel.parent / name) if str(rel.parent) != '.' else name


def convert_site(pages: list[tuple[str | None, str]]) -> list[dict]:
    "Write the MyST notebooks into _proc/_sphinx/; return one record per page in sidebar order."
    cfg = _cfg()
    if SRC.exists():
        shutil.rmtree(SRC)
    SRC.mkdir(parents=True)
    loaded = []
    for section, rel in pages:
        p = PROC / rel
        if not p.exists():
            raise BuildError(f'{rel} is in nbs/sidebar.yml but nbdev did not process it')
        if p.suffix == '.ipynb':
            with warnings.catch_warnings():  # nbdev writes processed notebooks without cell ids
                warnings.simplefilter('ignore')
                nb = nbformat.read(p, as_version=4)
            fm = _frontmatter(nb)
        else:
            nb, fm = _qmd_to_nb(p)
        loaded.append((section, rel, nb, fm, docname_for(rel, fm)))
    names = [l[4] for l in loaded]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise BuildError(f'two notebooks make the same page: {sorted(dupes)}')
    site = Site({rel: doc for _, rel, _, _, doc in loaded}, cfg['doc_host'] + cfg['doc_baseurl'])
    for _, _, nb, _, doc in loaded:
        site.anchors[doc] = _heading_ids(nb)
        n_fig = 0
        for c in nb.cells:
            for label in collect_labels(c):
                if label.startswith('fig-'):
                    n_fig += 1
                site.labels[label] = n_fig if label.startswith('fig-') else None
    records = []
    for section, rel, nb, fm, doc in loaded:
        title = fm.get('title')
        if not title:
            raise BuildError(f'{rel} has no title: its first cell must be `# Title` (and `> summary`)')
        new = convert_notebook(nb, site, doc, title, fm.get('description'))
        records.append({'section': section, 'source': f'nbs/{rel}', 'docname': doc, 'title': str(title), 'nb': new})
    # the landing page lists every page (hidden toctree: the sidebar shows it), in sidebar order
    index = next((r for r in records if r['docname'] == 'index'), None)
    if index is None:
        raise BuildError('nbs/index.ipynb is missing: it is the landing page and the README')
    groups = []
    for r in records:
        if r is index:
            continue
        if not groups or groups[-1][0] != r['section']:
            groups.append((r['section'], []))
        groups[-1][1].append(r['docname'])
    for section, docs in groups:
        cap = f':caption: {section}\n' if section else ''
        index['nb'].cells.append(
            nbformat.v4.new_markdown_cell(
                '```{toctree}\n:hidden:\n:maxdepth: 1\n:titlesonly:\n' + cap + '\n' + '\n'.join(docs) + '\n```'
            )
        )
    for r in records:
        dst = SRC / (r['docname'] + '.ipynb')
        dst.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(r.pop('nb'), dst)
    # pictures that markdown (Sphinx copies them) or raw HTML (served as they are) refer to by a path
    # relative to nbs/
    if EXTRA.exists():
        shutil.rmtree(EXTRA)
    EXTRA.mkdir()
    for f in PROC.rglob('*'):
        if (
            f.is_file()
            and f.suffix.lower() in ('.png', '.jpg', '.jpeg', '.gif', '.svg', '.webp')
            and not any(part.startswith(('_', '.')) for part in f.relative_to(PROC).parts)
        ):
            for d in (SRC / f.relative_to(PROC), EXTRA / f.relative_to(PROC)):
                d.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, d)
    return records


# ------------------------------------------------------------------------------------------------
# 4. MathJax from npm
# ------------------------------------------------------------------------------------------------
def mathjax():
    "Install the pinned `mathjax` npm package into .cache/docs-npm (npm ci, once) and stage it for Sphinx."
    lock = json.loads((CONF_DIR / 'package-lock.json').read_text())
    want = lock['packages']['node_modules/mathjax']['version']
    pkg = NPM_CACHE / 'node_modules' / 'mathjax'
    NPM_CACHE.mkdir(parents=True, exist_ok=True)
    with open(NPM_CACHE / '.lock', 'w') as lock_file:  # two builds at once install it once
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        have = json.loads((pkg / 'package.json').read_text())['version'] if (pkg / 'package.json').exists() else None
        if have != want:
            npm = shutil.which('npm')
            if not npm:
                raise BuildError('npm is needed to install MathJax (npm package `mathjax`): install Node.js and npm')
            for f in ('package.json', 'package-lock.json'):
                shutil.copy2(CONF_DIR / f, NPM_CACHE / f)
            _run(
                [npm, 'ci', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'],
                cwd=NPM_CACHE,
                what='npm ci (mathjax)',
            )
        es5 = pkg / 'es5'
        if ASSETS.exists():
            shutil.rmtree(ASSETS)
        dst = ASSETS / 'mathjax'
        for part in MATHJAX_PARTS:
            s, d = es5 / part, dst / part
            d.parent.mkdir(parents=True, exist_ok=True)
            if s.is_dir():
                shutil.copytree(s, d)
            else:
                shutil.copy2(s, d)
        shutil.copy2(pkg / 'LICENSE', dst / 'LICENSE')
    return want


# ------------------------------------------------------------------------------------------------
# 5. Sphinx
# ------------------------------------------------------------------------------------------------
def sphinx(out: Path, jobs: str = '1', records=()):
    if HTML.parent.exists():
        shutil.rmtree(HTML.parent)
    env = dict(os.environ, FEDGAUSS_DOCS_ASSETS=str(ASSETS), FEDGAUSS_DOCS_EXTRA=str(EXTRA), PYTHONWARNINGS='ignore')
    cmd = [
        sys.executable,
        '-m',
        'sphinx',
        '-b',
        'html',
        '-W',
        '--keep-going',
        '-q',
        '-E',
        '-j',
        jobs,
        '-c',
        str(CONF_DIR),
        '-d',
        str(DOCTREES),
        str(SRC),
        str(HTML),
    ]
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        err = r.stderr[-12000:]
        for rec in records:  # name the notebook, not its converted copy
            err = err.replace(
                str(SRC / (rec['docname'] + '.ipynb')), f"{rec['source']} (converted: {rec['docname']}.ipynb)"
            )
        raise BuildError(
            f'Sphinx failed (warnings are errors; line 10000*c+k is line k of cell c of the converted copy in '
            f'{SRC.relative_to(ROOT)}):\n{err}\n{r.stdout[-2000:]}'
        )
    (HTML / '.nojekyll').touch()
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(HTML), str(out))


# ------------------------------------------------------------------------------------------------
def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        '--check',
        action='store_true',
        help='change no tracked file; fail if README.md, nbs/sidebar.yml, nbs/nbdev.yml or fedgauss/_modidx.py is stale',
    )
    p.add_argument('--out', default=str(OUT), help='output folder (default: _docs)')
    p.add_argument('-j', '--jobs', default='1', help='Sphinx parallel jobs (default 1)')
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    before = {f: (ROOT / f).read_bytes() if (ROOT / f).exists() else None for f in TRACKED}
    stale = []
    try:
        with _step('README.md from nbs/index.ipynb (tools/make_readme.py)'):
            text = make_readme.render()
            if (ROOT / 'README.md').exists() and (ROOT / 'README.md').read_text() == text:
                _log('   up to date')
            else:
                (ROOT / 'README.md').write_text(text)
                _log('   README.md rewritten')
        with _step('nbdev_proc_nbs (notebooks processed as nbdev_docs does) and nbdev_sidebar'):
            for where in mixed_import_cells(ROOT / 'nbs'):
                _log(
                    f'   note: {where} mixes imports and other code: nbdev runs the whole cell at every docs '
                    'build (put the imports in a cell of their own)'
                )
            nbdev_process()
            pages = sidebar_pages()
        with _step(f'Quarto syntax -> MyST ({len(pages)} pages)'):
            records = convert_site(pages)
        with _step('MathJax from npm (no CDN)'):
            v = mathjax()
            _log(f'   mathjax {v}')
        with _step('Sphinx + myst-nb + pydata-sphinx-theme (-W: warnings fail the build)'):
            sphinx(Path(a.out), a.jobs, records)
    except BuildError as e:
        print(f'build_docs: {e}', file=sys.stderr)
        return 1
    finally:
        for f, old in before.items():
            new = (ROOT / f).read_bytes() if (ROOT / f).exists() else None
            if new != old:
                stale.append(f)
                if a.check:
                    if old is None:
                        (ROOT / f).unlink()
                    else:
                        (ROOT / f).write_bytes(old)
    out = Path(a.out)
    (out / '_pages.json').write_text(json.dumps(records, indent=1))
    _log(f'\nbuilt {len(records)} pages into {out} in {time.perf_counter() - t0:.1f} s:')
    for r in records:
        _log(f'  {r["docname"] + ".html":28} {r["source"]:32} {r["title"]}')
    if stale:
        if a.check:
            print(
                f'build_docs: stale: {", ".join(stale)} (run `python tools/build_docs.py` and commit)', file=sys.stderr
            )
            return 1
        print(f'build_docs: rewrote {", ".join(stale)}: commit', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
