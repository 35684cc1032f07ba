"""Small Sphinx extension of the fedgauss site: heading ids as Quarto makes them."""

import re


def pandoc_slug(title: str) -> str:
    """The id pandoc (hence Quarto) gives a heading: keep letters, digits, `_`, `-` and `.`; spaces become
    `-`; lower case; drop everything before the first letter. nbdev's API links (`federation.html#as_rng`,
    `#channel.send`) and authors' `[..](#some-heading)` links point at these ids."""
    s = re.sub(r'[^\w\-. ]', '', title.strip())
    s = re.sub(r'\s', '-', s).lower()
    s = re.sub(r'^[\W\d_]+', '', s)
    return s or 'section'


def setup(app):
    return {'version': '1', 'parallel_read_safe': True, 'parallel_write_safe': True}
