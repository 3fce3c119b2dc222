// The service as its own OS process (`serve --role <roles>` with the service's V8 flags, as `npm start`
// runs it): for benches, and for tests that must really kill a process.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVICE_NODE_FLAGS } from '../../scripts/service-node-flags.mjs';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export type ServiceProcess = { child: ChildProcess; startupLine: string };

/** Starts `serve --role <roles>` as its own OS process with the service's V8 flags, as `npm start` runs it, and resolves once it says it is running. */
export async function startServiceProcess(roles: string, env: Record<string, string>): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, 'src/cli.ts', 'serve', '--role', roles], { cwd: repoRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const startupLine = await new Promise<string>((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const line = output.split('\n').find((text) => text.startsWith('employer-integrations running'));
      if (line) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve(line);
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`serve --role ${roles} exited (${code}) before it was running: ${output}`)));
  });
  return { child, startupLine };
}

export async function stopServiceProcess(service: ServiceProcess): Promise<void> {
  if (service.child.exitCode !== null) return;
  const exited = once(service.child, 'exit');
  service.child.kill('SIGTERM');
  await exited;
}
