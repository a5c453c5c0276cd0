import type { RunResult } from '../test-helpers.js';
import { run } from './nodelet-up.js';

/**
 * Runs a command in a pseudo-terminal of a given size and resizes the terminal once its output shows a
 * pattern — what a user does who drags the window of a `kubectl exec -it` session. Node has no pty of its
 * own; Python's standard library does (python3 is part of the machine). The terminal's resize sends
 * SIGWINCH to the command, as a terminal emulator's does. Output is the terminal's, `\r\n` and all.
 */
const driver = String.raw`
import fcntl, json, os, re, select, struct, subprocess, sys, termios, time
cfg = json.loads(sys.argv[1])
master, slave = os.openpty()
def size(rows, cols):
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))
size(cfg['rows'], cfg['cols'])
def controlling():
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
child = subprocess.Popen(cfg['argv'], stdin=slave, stdout=slave, stderr=slave, preexec_fn=controlling, close_fds=True)
os.close(slave)
out = b''
resized = False
deadline = time.time() + cfg['timeoutSeconds']
while time.time() < deadline:
    ready, _, _ = select.select([master], [], [], 0.2)
    if ready:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
        if not resized and re.search(cfg['resizeOn'].encode(), out):
            size(cfg['newRows'], cfg['newCols'])
            resized = True
    elif child.poll() is not None:
        break
if child.poll() is None:
    child.kill()
sys.stdout.write(out.decode('utf-8', 'replace'))
sys.exit(child.wait())
`;

export interface TerminalRun {
  argv: string[];
  rows: number;
  cols: number;
  /** Once the output matches this (a Python regular expression), the terminal becomes newRows × newCols. */
  resizeOn: string;
  newRows: number;
  newCols: number;
  timeoutSeconds: number;
}

export function runInTerminal(o: TerminalRun): Promise<RunResult> {
  return run(undefined, '/usr/bin/python3', ['-c', driver, JSON.stringify(o)], {
    timeoutMs: (o.timeoutSeconds + 30) * 1000,
  });
}
