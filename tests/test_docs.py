"""The documentation site, checked the way a reader sees it.

`test_site` builds the real site with `python tools/build_docs.py --check` (which also fails if README.md,
nbs/sidebar.yml or nbs/nbdev.yml is stale), serves `_docs/` on 127.0.0.1 and opens every page in Debian's
headless Chromium (tools/check_docs.py): no console error, no request leaving the machine, every equation
typeset by MathJax and no raw TeX left, every image loaded, every internal link and #fragment resolving,
pages in the sidebar in nbdev's order, search working, API entries present; screenshots go to
`_docs/_shots/`.

`test_quarto_features` builds a site from a copy of the project with one more notebook that uses every
piece of Quarto syntax the builder converts (front matter, callouts, divs, `#| hide/export/exporti/
echo/output/include/code-fold/fig-cap/label/slow/warning`, `output: asis`, equation and section labels
with `@` references, link and image attributes, links to other notebooks) and checks each in the browser.

They need Debian's Chromium (or $CHROMIUM) and npm (MathJax is installed from the npm registry): on a
machine without them they skip with a reason; CI installs both and sets FEDGAUSS_REQUIRE_ALL=1, which turns
such a skip into a failure (tests/conftest.py).
"""

import base64, io, json, os, re, shutil, subprocess, sys, textwrap

import nbformat
import pytest
from conftest import ROOT, require_tools, skip_or_fail

sys.path.insert(0, str(ROOT / 'tools'))
import check_docs  # noqa: E402

SITE = ROOT / '_docs'


def _require_chromium(build=True):
    "The browser (and npm, for a test that builds the site), or a skip that says how to get them."
    exe = check_docs.find_chromium()
    if not exe:
        skip_or_fail('needs Chromium for the browser check: `apt-get install -y chromium` (Debian), or set $CHROMIUM')
    if build:
        require_tools('npm')
    return exe


def _copy_project(dst, notebooks=None):
    """The files the docs build reads, copied to `dst`: the build rewrites generated files (nbdev's
    fedgauss/_modidx.py, nbs/sidebar.yml, ...) and must not do it under the feet of the notebook tests
    that run in parallel. `notebooks`: names to keep from nbs/ (default: all)."""
    dst.mkdir(parents=True)
    for f in ('settings.ini', 'pyproject.toml', 'setup.py', 'README.md', '_quarto.yml'):
        shutil.copy2(ROOT / f, dst / f)
    skip = shutil.ignore_patterns('__pycache__', '.ipynb_checkpoints')
    shutil.copytree(ROOT / 'tools', dst / 'tools', ignore=skip)
    shutil.copytree(ROOT / 'fedgauss', dst / 'fedgauss', ignore=skip)

    def keep(d, names):
        return [n for n in names if n.endswith('.ipynb') and notebooks is not None and n not in notebooks] + list(
            skip(d, names)
        )

    shutil.copytree(ROOT / 'nbs', dst / 'nbs', symlinks=True, ignore=keep)
    return dst


def _build(root, *args):
    env = dict(os.environ, MPLBACKEND='Agg', FEDGAUSS_DOCS_NPM_CACHE=str(ROOT / '.cache' / 'docs-npm'))
    r = subprocess.run(
        [sys.executable, str(root / 'tools' / 'build_docs.py'), *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert r.returncode == 0, f'docs build failed:\n{r.stdout[-4000:]}\n{r.stderr[-8000:]}'
    return r


def _api_symbols():
    "Each module's public objects (`__all__`) and the page#id that nbdev's links give them."
    import importlib
    from fedgauss._modidx import d

    out = {}
    for mod, syms in d['syms'].items():
        public = set(getattr(importlib.import_module(mod), '__all__', []))
        for name, (url, _) in syms.items():
            if name[len(mod) + 1 :] not in public:
                continue
            page, _, frag = url.rpartition('/')[2].partition('#')
            out.setdefault(page, []).append((name[len(mod) + 1 :], frag))
    return out


# What may still not fit in a 1280 px window, each with the notebook that has to change (issue 16): page,
# kind, and the start of the equation's TeX (or of the picture's alt text). Equations are broken into
# `aligned` lines in the notebook; pictures are drawn at most ~8.5 in wide at 100 dpi (the column is
# ~850 px at 1280). Shrink this list, never grow it: tests/test_docs.py::test_site prints what is found.
ALLOWED_AT_1280 = {}


def not_fitting(report) -> list[tuple[str, str, str, str]]:
    "(page, kind, what, why) for each equation, code block, output or picture that does not fit at 1280 px."
    return [
        (page, x['kind'], x['what'], f"§{x['section']}: {x['why']}")
        for page, info in sorted(report['pages'].items())
        for x in info['layout']['clipped'] + info['layout']['shrunk']
    ]


def test_site(tmp_path):
    chromium = _require_chromium()
    # the whole site, built from a copy of the project into _docs/ (where CI keeps it as an artefact);
    # --check: fail if README.md, nbs/sidebar.yml, nbs/nbdev.yml or fedgauss/_modidx.py is stale
    r = _build(_copy_project(tmp_path / 'proj'), '--check', '--out', str(SITE))
    print(r.stdout)
    pages = json.loads((SITE / '_pages.json').read_text())
    # one page per notebook of nbs/, in the order of nbs/sidebar.yml, the landing page first
    nbs = sorted(p.name for p in (ROOT / 'nbs').glob('*.ipynb') if not p.name.startswith('_'))
    assert sorted(p['source'].removeprefix('nbs/') for p in pages) == nbs
    assert pages[0]['docname'] == 'index'

    report = check_docs.check_site(SITE, SITE / '_shots', chromium=chromium)
    assert not report['problems'], '\n'.join(report['problems'])

    # at 1280 px nothing is clipped (scrolls sideways, cut by its box, or past the column) and no picture is
    # shrunk below 3/4 of its size, except the listed ones; a listed one that now fits must leave the list
    found = not_fitting(report)
    for page, info in sorted(report['pages'].items()):
        L = info['layout']
        print(
            f"{page:22} column {L['column']}px: {L['checked']} checked, {len(L['clipped'])} clipped, "
            f"{len(L['shrunk'])} shrunk pictures, {L['wrapped']} wrapped code blocks"
        )
    allowed = lambda f: any(f[0] == a[0] and f[1] == a[1] and f[2].startswith(a[2]) for a in ALLOWED_AT_1280)
    bad = [f for f in found if not allowed(f)]
    assert not bad, f'{len(bad)} element(s) do not fit at 1280 px:\n' + '\n'.join(' | '.join(f) for f in bad)
    stale = [
        a for a in ALLOWED_AT_1280 if not any(f[0] == a[0] and f[1] == a[1] and f[2].startswith(a[2]) for f in found)
    ]
    assert not stale, f'these fit now: remove them from ALLOWED_AT_1280: {stale}'
    assert set(f"{p['docname']}.html" for p in pages) <= set(report['pages'])
    assert report['search'], 'the search page found nothing'
    assert len(report['shots']) == 2 and all(os.path.getsize(f) > 10_000 for f in report['shots'])

    # the landing page carries the README: its title, summary and every section heading
    index = report['pages']['index.html']
    readme = (ROOT / 'README.md').read_text()
    for h in [l.lstrip('#').strip() for l in readme.splitlines() if l.startswith('#')]:
        assert h in index['headings'], f'README heading {h!r} is not on the landing page'
    # ... and its status table links each available notebook to its page
    table_nbs = re.findall(r'\[`(\d\d[a-z]?_\w+)`\]\(nbs/\1\.ipynb\)', readme)
    page_of = {p['source'].removeprefix('nbs/').removesuffix('.ipynb'): p['docname'] + '.html' for p in pages}
    linked = {l.rpartition('/')[2].partition('#')[0] for l in index['links']}
    assert len(table_nbs) >= 10 and not [n for n in table_nbs if page_of[n] not in linked], (table_nbs, linked)
    summary = next(l[2:] for l in readme.splitlines() if l.startswith('> '))
    assert ' '.join(summary.split()) in ' '.join(index['text'].split())

    # API docs from show_doc: every public object of every module has its entry (signature + docstring)
    # at the id nbdev links to
    for page, syms in _api_symbols().items():
        ids = set(report['pages'][page]['ids'])
        missing = [s for s, frag in syms if frag not in ids]
        assert not missing, f'{page}: no show_doc entry for {missing}'
    fed = report['pages']['federation.html']
    assert fed['math_total'] > 0 and fed['math_typeset'] == fed['math_total']
    assert any('def iid_split(' in t for t in [fed['text']])
    assert len(fed['images']) >= 1


# ------------------------------------------------------------------------------------------------
def _png():
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1])
    b = io.BytesIO()
    fig.savefig(b, format='png', dpi=60)
    plt.close(fig)
    return b.getvalue()


def features_notebook(png: bytes):
    "A notebook with every piece of Quarto/nbdev syntax the site builder handles, with committed outputs."
    b64 = base64.b64encode(png).decode()
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    out_stream = lambda text, name='stdout': nbformat.v4.new_output('stream', name=name, text=text)
    out_data = lambda **data: nbformat.v4.new_output('display_data', data=data)

    def c(src, *outputs):
        cell = code(textwrap.dedent(src).strip())
        cell.outputs = list(outputs)
        return cell

    cells = [
        nbformat.v4.new_raw_cell('---\nauthor: fedgauss developers\ncategories: [docs]\n---'),
        md(
            '# Quarto features\n\n> Every piece of syntax the site builder converts, in one notebook: $\\alpha$ in the summary.'
        ),
        c('#| default_exp docs_features'),
        c('#| hide\nsecret = "HIDDEN-CELL-MARKER"'),
        c('import numpy as np'),
        md(
            '## Math and labels {#sec-math}\n\n'
            'Inline $\\sigma^2 = \\mathbb{E}[(X-\\mu)^2]$ and a labelled display:\n\n'
            '$$\n\\psi(\\lambda, x) = \\frac{(x+1)^\\lambda - 1}{\\lambda}\n$$ {#eq-yj}\n\n'
            'By @eq-yj, and as said in @sec-callouts, with `@dataclass` left alone and mail to a@b.org untouched. '
            'Also \\(a+b\\) as TeX delimiters and an aligned block:\n\n'
            '$$\n\\begin{aligned} a &= b \\\\ c &= d \\end{aligned}\n$$'
        ),
        c('''
          #| export
          def scratch_mean(x:float, # the first number
                           y:float=1.0, # the second number
                          )->float: # their mean
              "Mean of `x` and `y`: $(x+y)/2$."
              return (x + y) / 2  # EXPORT-BODY-MARKER
          '''),
        c('''
          #| exporti
          def _scratch_helper(): return 1  # EXPORTI-MARKER
          '''),
        md(
            'Links: [the IID partitioner](00_federation.ipynb#iid), [the federation page](00_federation.ipynb), '
            '[a function](https://fedgauss.github.io/fedgauss/federation.html#iid_split), '
            '[back to the top](#math-and-labels), '
            '[an external page](https://example.org/){target="_blank"}, [a span]{.smallcaps}, '
            'and a picture with attributes: ![a line](line.png){width=120 fig-align="center"}.\n\n'
            '![A labelled picture.](line.png){#fig-pic width=80}\n\nSee @fig-pic and @fig-undefined.'
        ),
        md('<img src="line.png" alt="raw html picture" width="60">'),
        md(
            '## Callouts {#sec-callouts}\n\n'
            '::: {.callout-note}\nA plain note with $x^2$. NOTE-MARKER\n:::\n\n'
            '::: {.callout-warning title="Mind the gap"}\nWARNING-MARKER\n:::\n\n'
            '::: {.callout-tip}\n## A tip title\n\nTIP-MARKER\n:::\n\n'
            '::: {.callout-important}\nOuter. IMPORTANT-MARKER\n\n::: {.callout-caution}\nInner. CAUTION-MARKER\n:::\n\n:::\n\n'
            '::: {.column-margin}\nMARGIN-MARKER in a layout div\n:::\n\n'
            ':::: {.columns}\n::: {.column width="50%"}\nLEFT-COLUMN\n:::\n::: {.column width="50%"}\n'
            '```python\n::: not a fence inside code\n```\n:::\n::::'
        ),
        c(
            '''
          #| fig-cap: "A straight line, $y = x$."
          #| label: fig-line
          import matplotlib.pyplot as plt
          plt.plot([0, 1], [0, 1]);
          ''',
            out_data(**{'image/png': b64, 'text/plain': '<Figure size 300x200>'}),
        ),
        md('As @fig-line shows, the line is straight.'),
        c(
            '''
          #| code-fold: true
          #| code-summary: "FOLD-SUMMARY"
          #| tbl-cap: "TABLE-CAPTION"
          import pandas as pd
          pd.DataFrame({'a': [1, 2], 'b': [3.5, 4.5]})  # FOLDED-CODE
          ''',
            out_data(
                **{
                    'text/html': '<div><table class="dataframe"><thead><tr><th></th><th>a</th><th>b</th></tr></thead>'
                    '<tbody><tr><th>0</th><td>1</td><td>3.5</td></tr></tbody></table></div>',
                    'text/plain': '   a    b',
                }
            ),
        ),
        c('''
          #| code-fold: show
          x = 1  # FOLD-SHOW-CODE
          '''),
        c('#| echo: false\nprint("ECHO-FALSE-OUTPUT")  # ECHO-FALSE-INPUT', out_stream('ECHO-FALSE-OUTPUT\n')),
        c('#| output: false\nprint("OUTPUT-FALSE")', out_stream('OUTPUT-FALSE-TEXT\n')),
        c('#| include: false\nprint("INCLUDE-FALSE")  # INCLUDE-FALSE-INPUT', out_stream('INCLUDE-FALSE-TEXT\n')),
        c(
            '#| slow\ny = sum(range(10))  # SLOW-CELL\ny',
            nbformat.v4.new_output('execute_result', data={'text/plain': '45'}, execution_count=3),
        ),
        c('#| output: asis\n#| echo: false\nprint("**ASIS-BOLD** and $a+b$")', out_stream('**ASIS-BOLD** and $a+b$\n')),
        c(
            '#| warning: false\nimport warnings; warnings.warn("x")',
            out_stream('UserWarning: WARNING-TEXT\n', 'stderr'),
        ),
        c('print("STDERR-SHOWN", file=__import__("sys").stderr)', out_stream('STDERR-SHOWN\n', 'stderr')),
        md('| a | b |\n|---|---|\n| 1 | 2 |\n\nA table above, and a dollar amount in code: `$5`.'),
        c('#| hide\nimport nbdev; nbdev.nbdev_export()'),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {'kernelspec': {'display_name': 'python3', 'language': 'python', 'name': 'python3'}}
    return nb


_FEATURES_JS = r"""(() => {
  const q = s => [...document.querySelectorAll(s)];
  const art = document.querySelector('article');
  return {
    text: art.innerText,
    html: art.innerHTML,
    h1: q('article h1').map(h => h.textContent.replace(/#$/, '').trim()),
    admonitions: q('article .admonition').map(a => ({cls: a.className, title: (a.querySelector('.admonition-title') || {}).textContent,
                                                    text: a.innerText, nested: a.querySelectorAll('.admonition').length})),
    figures: q('article figure').map(f => ({caption: (f.querySelector('figcaption') || {}).innerText || '', id: f.id,
                                            img: !!f.querySelector('img'), math: f.querySelectorAll('mjx-container').length})),
    details: q('article details').map(d => ({open: d.open, summary: d.querySelector('summary').innerText})),
    links: q('article a[href]').map(a => ({text: a.innerText.trim(), href: a.getAttribute('href')})),
    eq_numbers: q('article .math .eqno, article span.eqno').map(e => e.innerText),
    api: q('article h3').map(h => h.textContent.replace(/#$/, '')),
    tables: q('article table').length,
    images: q('article img').map(i => ({src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0, width: i.getAttribute('width')})),
  };
})()"""


def test_quarto_features(tmp_path):
    chromium = _require_chromium()
    # a copy of the project with the landing page, one real notebook and the features notebook
    root = _copy_project(tmp_path / 'proj', notebooks={'index.ipynb', '00_federation.ipynb'})
    png = _png()
    (root / 'nbs' / 'line.png').write_bytes(png)
    nbformat.write(features_notebook(png), root / 'nbs' / '50_docs_features.ipynb')
    _build(root)  # not --check: the copy's sidebar.yml gains the new notebook
    site = root / '_docs'
    pages = json.loads((site / '_pages.json').read_text())
    assert [p['docname'] for p in pages] == ['index', 'federation', 'docs_features']

    report = check_docs.check_site(site, None, chromium=chromium)
    # the copy has two of the notebooks: the landing page's links to the others have no page to go to
    problems = [
        p
        for p in report['problems']
        if not re.match(r'index\.html: broken link: \S+/\d\d[a-z]?_\w+\.ipynb \(no such file\)$', p)
    ]
    assert not problems, '\n'.join(problems)
    page = report['pages']['docs_features.html']
    assert page['math_total'] >= 5 and page['math_typeset'] == page['math_total']

    with check_docs.Server(site) as srv:
        b = check_docs.Browser(chromium)
        try:
            b.goto(srv.url + 'docs_features.html')
            b.js(check_docs._INSPECT)
            f = b.js(_FEATURES_JS)
        finally:
            b.close()
    text = f['text']
    # front matter: the title and the summary (with its math) head the page
    assert f['h1'] == ['Quarto features']
    assert 'Every piece of syntax the site builder converts' in text
    # hidden and exported code is not shown, show_doc's entry is, with its docments table
    for gone in (
        'HIDDEN-CELL-MARKER',
        'EXPORT-BODY-MARKER',
        'EXPORTI-MARKER',
        '_scratch_helper',
        'INCLUDE-FALSE',
        'ECHO-FALSE-INPUT',
        'OUTPUT-FALSE-TEXT',
        'WARNING-TEXT',
        '#|',
        'default_exp',
        'nbdev_export',
    ):
        assert gone not in text, f'{gone!r} should not be on the page'
    assert 'scratch_mean' in f['api'] and 'scratch_mean' in page['ids'], f['api']
    assert 'def scratch_mean(' in text and 'Mean of' in text and 'the first number' in text
    for shown in (
        'ECHO-FALSE-OUTPUT',
        'ASIS-BOLD',
        'SLOW-CELL',
        '45',
        'STDERR-SHOWN',
        'MARGIN-MARKER',
        'LEFT-COLUMN',
        '::: not a fence inside code',
        '$5',
        '@dataclass',
        'a@b.org',
    ):
        assert shown in text, f'{shown!r} should be on the page'
    assert '<strong>ASIS-BOLD</strong>' in f['html']
    # callouts became admonitions of the right kind, with their titles, nested ones nested
    adm = {a['cls'].split()[1]: a for a in f['admonitions'] if len(a['cls'].split()) > 1}
    kinds = ' '.join(a['cls'] for a in f['admonitions'])
    for k in ('note', 'warning', 'tip', 'important', 'caution'):
        assert f'callout-{k}' in kinds, kinds
    titled = {a['title']: a['text'] for a in f['admonitions']}
    assert 'WARNING-MARKER' in titled['Mind the gap'] and 'TIP-MARKER' in titled['A tip title']
    assert 'A tip title' not in titled['A tip title'].replace('A tip title', '', 1)  # the heading became the title
    assert any(
        a['nested'] == 1 and 'IMPORTANT-MARKER' in a['text'] and 'CAUTION-MARKER' in a['text'] for a in f['admonitions']
    )
    assert '::: {' not in text and ':::' not in text.replace('::: not a fence inside code', '')
    # the figure has its caption (math typeset) and the cross-reference links to it
    links = {l['text']: l['href'] for l in f['links']}
    fig = next(x for x in f['figures'] if 'straight line' in x['caption'])
    assert (
        fig['img']
        and fig['math'] == 1
        and fig['id'] == 'fig-line'
        and fig['caption'].startswith('Figure 2: A straight line')
    )
    pic = next(x for x in f['figures'] if 'labelled picture' in x['caption'])
    assert (
        pic['img']
        and pic['id'] == 'fig-pic'
        and pic['caption'].startswith('Figure 1: A labelled')
        and links['Figure 1'] == '#fig-pic'
    )
    assert '@fig-undefined' in text  # an unknown label stays as it was written
    assert links['Figure 2'] == '#fig-line', links
    assert links['(1)'] == '#equation-eq-yj', links
    assert any(h.endswith('#sec-callouts') for h in links.values()), links
    assert f['eq_numbers'] or '(1)' in text
    # links to other notebooks and to the doc host became links to this site's pages
    assert links['the IID partitioner'] == 'federation.html#iid'
    assert links['the federation page'] == 'federation.html'
    assert links['a function'] == 'federation.html#iid_split'
    assert links['an external page'] == 'https://example.org/'
    # code-fold: folded (closed) with its summary; `show`: open
    assert any(not d['open'] and 'FOLD-SUMMARY' in d['summary'] for d in f['details']), f['details']
    assert any(d['open'] for d in f['details']), f['details']
    assert f['tables'] >= 2 and 'TABLE-CAPTION' in text
    imgs = [i for i in f['images'] if i['src'] and 'line' in i['src']]
    assert len(imgs) == 3 and all(i['ok'] for i in imgs) and any(i['width'] == '120' for i in imgs), f['images']


def test_checker_catches_faults(tmp_path):
    "The browser check is not a rubber stamp: a page with each kind of fault gets each one reported."
    chromium = _require_chromium(build=False)
    site = tmp_path / 'site'
    site.mkdir()
    (site / 'ok.html').write_text(
        '<html><head><title>ok</title><link rel="icon" href="data:,"></head>'
        '<body><article><h1 id="top">fine</h1></article></body></html>'
    )
    (site / 'index.html').write_text(
        textwrap.dedent(
            r'''
        <html><head><title>faults</title><link rel="icon" href="data:,"></head><body><article>
        <h1>faults</h1>
        <p>raw TeX: $a+b$ and <span class="math">\(x^2\)</span></p>
        <img src="missing.png"> <img src="https://cdn.example.invalid/logo.png">
        <a href="nope.html">gone</a> <a href="ok.html#nowhere">no anchor</a> <a href="ok.html#top">fine</a>
        <pre style="overflow-x:auto; white-space:pre; width:300px">CLIPPED-CODE '''
            + 'x' * 400
            + r'''</pre>
        <script>console.error("BOOM"); throw new Error("UNCAUGHT");</script>
        </article></body></html>'''
        )
    )
    report = check_docs.check_site(site, None, chromium=chromium)
    problems = '\n'.join(report['problems'])
    for expected in (
        'console.error: BOOM',
        'UNCAUGHT',
        'raw TeX left in the text',
        'MathJax: not loaded',
        'image did not load: http://127.0.0.1',
        'missing.png',
        'request leaves the site: https://cdn.example.invalid',
        'broken link: http://127.0.0.1',
        'nope.html (no such file)',
        'ok.html#nowhere (no id #nowhere)',
        'HTTP 404',
    ):
        assert expected in problems, f'{expected!r} not reported:\n{problems}'
    assert 'ok.html#top' not in problems
    assert 'picture without alt text' in problems
    clipped = report['pages']['index.html']['layout']['clipped']
    assert [c['kind'] for c in clipped] == ['code'] and clipped[0]['what'].startswith('CLIPPED-CODE'), clipped
    assert not [p for p in report['problems'] if p.startswith('ok.html:')]
