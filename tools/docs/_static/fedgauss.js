// `#| code-fold: show` in Quarto means "folded code, shown open": myst-nb folds it closed.
document.addEventListener('DOMContentLoaded', () => {
  document.querySelectorAll('.tag_fg-fold-open details').forEach(d => { d.open = true; });
});
