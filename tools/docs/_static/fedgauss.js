// `#| code-fold: show` in Quarto means "folded code, shown open": myst-nb folds it closed.
document.addEventListener('DOMContentLoaded', () => {
  document.querySelectorAll('.tag_fg-fold-open details').forEach(d => { d.open = true; });
});

// MathJax reads `\operatorname{expm1}` as the name "expm" followed by the number 1 (and a screen reader says
// "expm 1"): an operator name with a digit in it (expm1, log1p, log2) is read as one word.
window.MathJax = window.MathJax || {};
window.MathJax.startup = Object.assign({}, window.MathJax.startup, {
  ready() {
    MathJax.startup.defaultReady();
    const tex = MathJax.startup.document.inputJax.find(j => j.name === 'TeX');
    if (tex) tex.preFilters.add(({math}) => {
      math.math = math.math.replace(/\\operatorname\s*\{\s*([A-Za-z]+[0-9][A-Za-z0-9]*)\s*\}/g, '\\operatorname{\\text{$1}}');
    });
  },
});

// a picture shown smaller than it was drawn opens at full size on a click
window.addEventListener('load', () => {
  document.querySelectorAll('article div.cell_output img, article figure img').forEach(img => {
    if (img.closest('a') || img.naturalWidth <= img.getBoundingClientRect().width * 1.05) return;
    const a = document.createElement('a');
    a.href = img.getAttribute('src'); a.className = 'fg-zoom'; a.title = 'open the picture at full size';
    img.replaceWith(a); a.appendChild(img);
  });
});
