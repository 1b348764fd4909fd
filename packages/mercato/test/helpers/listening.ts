/**
 * A spawned `mercato dev` (or `start`) until it says where it listens: the URL of its `listening on http://…` line, and
 * everything it printed (stdout and stderr) so far and after. Rejects with the output when it exits first or the time
 * runs out.
 */
import type { ChildProcess } from 'node:child_process';

export async function untilListening(child: ChildProcess, timeoutMs: number): Promise<{ url: string; output: () => string }> {
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`mercato did not start in ${timeoutMs / 1000} s:\n${output}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`mercato exited with ${code} before listening:\n${output}`));
    });
  });
  return { url, output: () => output };
}
