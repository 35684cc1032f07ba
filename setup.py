# The nbdev 2 template setup.py, without `pkg_resources` (gone from current setuptools).
# All settings live in settings.ini: edit there, not here.
from configparser import ConfigParser
import setuptools, shlex

config = ConfigParser(delimiters=['='])
config.read('settings.ini', encoding='utf-8')
cfg = config['DEFAULT']

cfg_keys = 'version description keywords author author_email'.split()
expected = cfg_keys + "lib_name user branch license status min_python audience language".split()
for o in expected: assert o in cfg, "missing expected setting: {}".format(o)
setup_cfg = {o:cfg[o] for o in cfg_keys}

# SPDX license expressions (PEP 639): current setuptools deprecates 'License ::' classifiers.
licenses = {'apache2': 'Apache-2.0', 'mit': 'MIT', 'gpl2': 'GPL-2.0-only', 'gpl3': 'GPL-3.0-only', 'bsd3': 'BSD-3-Clause'}
statuses = [ '1 - Planning', '2 - Pre-Alpha', '3 - Alpha',
    '4 - Beta', '5 - Production/Stable', '6 - Mature', '7 - Inactive' ]
py_versions = '3.6 3.7 3.8 3.9 3.10 3.11 3.12 3.13'.split()

requirements = shlex.split(cfg.get('requirements', ''))
if cfg.get('pip_requirements'): requirements += shlex.split(cfg.get('pip_requirements', ''))
min_python = cfg['min_python']
lic = licenses.get(cfg['license'].lower(), cfg['license'])
dev_requirements = (cfg.get('dev_requirements') or '').split()
# fedgauss addition: peers used only by tests and benchmarks (xgboost, dp-accounting, ...).
# `dev` includes them, so `pip install -e ".[dev]" && pytest` runs every test.
test_requirements = (cfg.get('test_requirements') or '').split()
# `learn`: a notebook front end for students who run the notebooks (JupyterLab).
learn_requirements = (cfg.get('learn_requirements') or '').split()
# `fast`: gmpy2, the big-integer backend of fedgauss.paillier, and numba, the compiled kernels of fedgauss.fast
# (without them the same results come from pure Python and NumPy, several times slower).
fast_requirements = (cfg.get('fast_requirements') or '').split()
flower_requirements = (cfg.get('flower_requirements') or '').split()
# `docs`: the site's toolchain (Sphinx, myst-nb, the theme, websocket-client for the browser check): tests/test_docs.py
# needs it, with Chromium and npm; without it that test skips (fails under FEDGAUSS_REQUIRE_ALL), like the flower tests.
docs_requirements = (cfg.get('docs_requirements') or '').split()
# `bench`: peers that only the benchmarks (tests/bench_*.py) compare with.
bench_requirements = (cfg.get('bench_requirements') or '').split()

package_data = dict()
pkg_data = cfg.get('package_data', None)
if pkg_data:
    package_data[cfg['lib_name']] =  pkg_data.split() # split as multiple files might be listed
# Add package data to setup_cfg for setuptools.setup(..., **setup_cfg)
setup_cfg['package_data'] = package_data

setuptools.setup(
    name = cfg['lib_name'],
    license = lic,
    license_files = ['LICENSE'],
    classifiers = [
        'Development Status :: ' + statuses[int(cfg['status'])],
        'Intended Audience :: ' + cfg['audience'].title(),
        'Natural Language :: ' + cfg['language'].title(),
    ] + ['Programming Language :: Python :: '+o for o in py_versions[py_versions.index(min_python):]],
    url = cfg['git_url'],
    packages = setuptools.find_packages(include=[cfg['lib_path'], cfg['lib_path'] + '.*']),
    include_package_data = True,
    install_requires = requirements,
    extras_require={ 'dev': dev_requirements + test_requirements, 'test': test_requirements,
                     'learn': learn_requirements + test_requirements, 'fast': fast_requirements, 'flower': flower_requirements,
                     'docs': docs_requirements, 'bench': bench_requirements + test_requirements },     # the notebooks import the peers they compare with
    dependency_links = cfg.get('dep_links','').split(),
    python_requires  = '>=' + cfg['min_python'],
    long_description = open('README.md', encoding='utf-8').read(),
    long_description_content_type = 'text/markdown',
    zip_safe = False,
    entry_points = {
        'console_scripts': cfg.get('console_scripts','').split(),
        'nbdev': [f'{cfg.get("lib_path")}={cfg.get("lib_path")}._modidx:d']
    },
    **setup_cfg)
