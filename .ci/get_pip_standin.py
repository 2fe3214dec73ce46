"""Offline stand-in for the get-pip bootstrap script that ansible-test downloads.

ansible-test runs ``GET_PIP=<this file> python quiet_pip.py <pip options> pip==X ...`` in each
fresh sanity venv. The download host is unreachable here, so this file is placed in
``~/.ansible/test/cache/get_pip_<X_Y>.py``: it bootstraps the interpreter's bundled pip wheel
with ensurepip and then installs the requested packages from the configured package index.
"""

import os
import subprocess
import sys


def main():
    """Bootstrap pip, then install what ansible-test asked for."""
    saved = dict(os.environ)
    import ensurepip  # pylint: disable=import-outside-toplevel

    ensurepip.bootstrap(upgrade=True)
    # ensurepip points PIP_CONFIG_FILE at /dev/null; restore the environment so the
    # index and CA settings of /etc/pip.conf apply to the real install below.
    os.environ.clear()
    os.environ.update(saved)

    args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]
    conf = os.path.join(sys.prefix, 'pip.conf')
    if os.path.exists('/etc/pip.conf') and not os.path.exists(conf):
        with open('/etc/pip.conf', 'rb') as src, open(conf, 'wb') as dst:
            dst.write(src.read())
    if args:
        subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + args)


if __name__ == '__main__':
    main()
