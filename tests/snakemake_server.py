"""Starts Snakemake for the tests without paying for its imports each time (~1.2 CPU s a start).

Run by ``pipeline_utils.snakemake_cli``: it imports Snakemake once, then reads one request a
line on stdin (JSON: argv, cwd, env, stdout and stderr paths), forks a process that runs
``python -m snakemake *argv``'s main with that working directory, environment and output, and
writes its exit code as a line on stdout. The forked process reads the Snakefile, the config
and the rnnrepro package afresh, as a new start does.
"""

import atexit
import json
import os
import sys

from snakemake.cli import main


def run(request: dict) -> int:
    """Exit code of Snakemake's main for ``request``, run in a forked process."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
                file = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(file, fd)
                os.close(file)
            main(request["argv"])  # always exits
        except SystemExit as stop:
            code = 0 if stop.code is None else stop.code if isinstance(stop.code, int) else 1
        finally:
            atexit._run_exitfuncs()  # as an interpreter's exit would
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


if __name__ == "__main__":
    for line in sys.stdin:
        print(run(json.loads(line)), flush=True)
