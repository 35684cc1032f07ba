#!/usr/bin/env python
"""Generate README.md from nbs/index.ipynb without Quarto.

`nbdev_readme` renders the index notebook with Quarto, which cannot be installed everywhere.
This does the same job with nbconvert: cells flagged `#| hide` are dropped, `#|` directive lines
are removed from code cells, the `#| default_exp` cell disappears, and the notebook's committed
outputs are kept. `--check` exits 1 if README.md differs from what would be generated.
"""

import argparse, re, sys
from pathlib import Path

import nbformat
from nbconvert import MarkdownExporter
from nbconvert.preprocessors import TagRemovePreprocessor

ROOT = Path(__file__).resolve().parents[1]
_directive = re.compile(r'^\s*#\s*\|\s*(\S+)')


def _directives(src):
    return [m.group(1).rstrip(':') for line in src.splitlines() if (m := _directive.match(line))]


def render(nb_path=ROOT / 'nbs' / 'index.ipynb') -> str:
    nb = nbformat.read(nb_path, as_version=4)
    cells = []
    for c in nb.cells:
        d = _directives(c.source) if c.cell_type == 'code' else []
        if 'hide' in d or 'default_exp' in d or 'exec_doc' in d:
            continue
        if 'hide_input' in d or re.search(r'#\s*\|\s*echo:\s*false', c.source):
            c.metadata.setdefault('tags', []).append('remove_input')
        c.source = '\n'.join(l for l in c.source.splitlines() if not _directive.match(l))
        if c.cell_type == 'code':
            # drop execution counts and stream noise so the README does not change from run to run
            c.execution_count = None
        cells.append(c)
    nb.cells = cells
    nb.metadata['language_info'] = {'name': 'python'}  # so code blocks are fenced as python
    exporter = MarkdownExporter(exclude_input_prompt=True, exclude_output_prompt=True)
    exporter.register_preprocessor(
        TagRemovePreprocessor(remove_input_tags={'remove_input'}, enabled=True), enabled=True
    )
    body, _ = exporter.from_notebook_node(nb)
    body = re.sub(r'<style scoped>.*?</style>\n?', '', body, flags=re.S)  # pandas' notebook CSS means nothing on GitHub
    body = re.sub(r'\n{3,}', '\n\n', body).strip() + '\n'
    # links to notebooks are written from nbs/ (where the site is built); the README sits one level up
    body = re.sub(r'\]\((\d\d[a-z]?_[\w-]+\.ipynb(?:#[^)\s]*)?)\)', r'](nbs/\1)', body)
    header = '<!-- Generated from nbs/index.ipynb by tools/make_readme.py: edit the notebook, not this file. -->\n\n'
    return header + body


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--check', action='store_true', help='fail if README.md is stale')
    a = p.parse_args(argv)
    text, readme = render(), ROOT / 'README.md'
    if a.check:
        if not readme.exists() or readme.read_text() != text:
            print('README.md is stale: run `python tools/make_readme.py`', file=sys.stderr)
            return 1
        print('README.md is up to date')
        return 0
    readme.write_text(text)
    print(f'wrote {readme}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
