/**
 * The server as its own process (`src/server.ts` under tsx), for tests that kill it: a crash
 * test needs a real process, not an app in the test's own.
 */
import { type ChildProcess, spawn } from 'node:child_process';

export interface Server {
  child: ChildProcess;
  base: string;
  output: () => string;
}

/** Starts `src/server.ts` as its own process and waits until it serves. */
export async function startServer(env: Record<string, string>): Promise<Server> {
  // One process (tsx's loader inside node), so a signal reaches the server itself.
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      DEMO_ACCOUNT: 'false',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (chunk) => {
    out += String(chunk);
  });
  child.stderr?.on('data', (chunk) => {
    out += String(chunk);
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
    if (match?.[1] && out.includes('ready: serving requests')) {
      return { child, base: match[1], output: () => out };
    }
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`server did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function kill(server: Server, signal: NodeJS.Signals): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  // 'close' comes after the output pipes are drained, unlike 'exit'.
  const exited = new Promise((r) => server.child.once('close', r));
  server.child.kill(signal);
  await exited;
}
