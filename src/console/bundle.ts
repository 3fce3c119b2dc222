// Builds the admin console (console/src) into console/dist with esbuild: at `npm install` (console/build.ts)
// and at start-up when the bundle is missing or older than a source, so a checkout never needs a
// separate build step and no built asset is committed.
import { copyFile, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

export const CONSOLE_ROOT = join(import.meta.dirname, '..', '..', 'console');
export const CONSOLE_SOURCES = join(CONSOLE_ROOT, 'src');
export const CONSOLE_DIST = join(CONSOLE_ROOT, 'dist');
/** What the bundle consists of; console/src/index.html loads the first two. */
export const CONSOLE_ASSETS = ['app.js', 'app.css', 'index.html'] as const;

/** Builds when a source is newer than the bundle (or a file of it is missing); says whether it built. */
export async function ensureConsoleBundle(): Promise<boolean> {
  if ((await newestSourceTime()) < (await oldestAssetTime())) return false;
  await buildConsoleBundle();
  return true;
}

export async function buildConsoleBundle(): Promise<void> {
  // Imported only when a build is due: a started service with a current bundle never loads esbuild.
  const esbuild = await import('esbuild');
  // Built beside dist and renamed into it, so concurrent starts (tests) never serve half a file.
  const staging = `${CONSOLE_DIST}.${process.pid}.${Date.now()}`;
  try {
    await esbuild.build({
      entryPoints: { app: join(CONSOLE_SOURCES, 'main.ts') },
      bundle: true,
      format: 'esm',
      target: 'es2022',
      minify: true,
      legalComments: 'none',
      outdir: staging,
      logLevel: 'silent',
    });
    await copyFile(join(CONSOLE_SOURCES, 'index.html'), join(staging, 'index.html'));
    await mkdir(CONSOLE_DIST, { recursive: true });
    for (const asset of CONSOLE_ASSETS) await rename(join(staging, asset), join(CONSOLE_DIST, asset));
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

async function newestSourceTime(): Promise<number> {
  const entries = await readdir(CONSOLE_SOURCES, { recursive: true, withFileTypes: true });
  const times = await Promise.all(entries.filter((entry) => entry.isFile()).map(async (entry) => (await stat(join(entry.parentPath, entry.name))).mtimeMs));
  return Math.max(...times);
}

async function oldestAssetTime(): Promise<number> {
  try {
    const times = await Promise.all(CONSOLE_ASSETS.map(async (asset) => (await stat(join(CONSOLE_DIST, asset))).mtimeMs));
    return Math.min(...times);
  } catch {
    return 0;
  }
}
