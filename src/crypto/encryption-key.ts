// ENCRYPTION_KEY, or for local use a key generated once into DATA_DIR (so `npm start` needs no set-up).
import { randomBytes, type KeyObject } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config.ts';
import { parseEncryptionKey } from './secret-box.ts';

export async function resolveEncryptionKey(config: Config): Promise<KeyObject> {
  if (config.ENCRYPTION_KEY) return parseEncryptionKey(config.ENCRYPTION_KEY);
  return parseEncryptionKey(await readOrCreateKeyFile(config.DATA_DIR, 'encryption.key', () => randomBytes(32).toString('base64')));
}

/**
 * The text of DATA_DIR/<fileName>, written first with `generate()` (mode 0600) when it does not exist.
 * Processes starting together agree: the first write wins (`wx`) and everyone reads the file.
 */
export async function readOrCreateKeyFile(dataDir: string, fileName: string, generate: () => string): Promise<string> {
  const file = join(dataDir, fileName);
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, generate(), { mode: 0o600, flag: 'wx' }).catch(async (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  return (await readFile(file, 'utf8')).trim();
}
