"""Sphinx configuration of the fedgauss documentation site.

Used by `tools/build_docs.py` (`sphinx-build -c tools/docs`), which writes the sources — the notebooks
processed by nbdev and converted from Quarto syntax to MyST — into `_proc/_sphinx/`. Nothing here
fetches anything from the network: MathJax is served from `_static/mathjax` (npm package `mathjax`,
installed by the build), the theme's fonts and scripts ship with pydata-sphinx-theme, and notebook
outputs are the committed ones (no execution).
"""

import configparser, os, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
ROOT = Path(__file__).resolve().parents[2]
ASSETS = Path(os.environ.get('FEDGAUSS_DOCS_ASSETS', ROOT / '_proc' / '_sphinx_assets'))
EXTRA = Path(os.environ.get('FEDGAUSS_DOCS_EXTRA', ROOT / '_proc' / '_sphinx_extra'))

_ini = configparser.ConfigParser()
_ini.read(ROOT / 'settings.ini')
_cfg = _ini['DEFAULT']

project = _cfg['repo']
author = _cfg['author']
copyright = _cfg['copyright']
release = version = _cfg['version']

extensions = ['myst_nb', 'fedgauss_sphinx']
source_suffix = {'.ipynb': 'myst-nb', '.md': 'myst-nb'}
exclude_patterns = ['_build', '**.ipynb_checkpoints']
templates_path = ['_templates']
html_static_path = ['_static', str(ASSETS)]
html_extra_path = [str(EXTRA)] if EXTRA.is_dir() else []
html_css_files = ['fedgauss.css']
html_js_files = ['fedgauss.js']

# --- notebooks: render the committed outputs, never execute --------------------------------------
nb_execution_mode = 'off'
nb_render_markdown_format = 'myst'  # text/markdown outputs may carry math
nb_ipywidgets_js = {}  # widget managers come from a CDN: never add them
nb_merge_streams = True
nb_output_stderr = 'show'

# --- MyST: the Quarto syntax that tools/build_docs.py does not rewrite is understood here ----------
myst_enable_extensions = [
    'dollarmath',
    'amsmath',
    'colon_fence',
    'attrs_inline',
    'attrs_block',
    'deflist',
    'strikethrough',
    'tasklist',
]
myst_dmath_double_inline = True
myst_all_links_external = True  # links were rewritten to page.html#anchor; the browser test checks them
myst_heading_anchors = 6
# heading ids as Quarto/pandoc makes them, so nbdev's links (`federation.html#as_rng`) resolve
myst_heading_slug_func = 'fedgauss_sphinx.pandoc_slug'
suppress_warnings = [
    'myst.header'  # show_doc emits `###` headings whatever the level of the section around them
]

# --- MathJax 3 from the local copy ----------------------------------------------------------------
mathjax_path = 'mathjax/tex-mml-chtml.js'

# --- theme --------------------------------------------------------------------------------------
html_theme = 'pydata_sphinx_theme'
html_title = project
html_favicon = '_static/favicon.svg'  # else the browser asks for /favicon.ico, which does not exist
html_baseurl = _cfg['doc_host'] + _cfg['doc_baseurl'] + '/'
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
html_theme_options = {
    'navbar_start': ['navbar-logo'],
    'navbar_center': [],
    'navbar_end': ['search-button', 'theme-switcher'],
    'navbar_persistent': [],
    'secondary_sidebar_items': ['page-toc'],
    'footer_start': ['copyright'],
    'footer_end': ['sphinx-version'],
    'show_prev_next': True,
    'navigation_with_keys': False,
    'show_toc_level': 2,
    'search_bar_text': 'Search the docs…',
}
html_sidebars = {'**': ['sidebar-nav-all']}
html_context = {'default_mode': 'light'}
