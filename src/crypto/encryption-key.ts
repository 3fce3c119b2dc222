// ENCRYPTION_KEY, or for local use a key generated once into DATA_DIR (so `npm start` needs no set-up).
import { randomBytes, type KeyObject } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config.ts';
import { parseEncryptionKey } from './secret-box.ts';

export async function resolveEncryptionKey(config: Config): Promise<KeyObject> {
  if (config.ENCRYPTION_KEY) return parseEncryptionKey(config.ENCRYPTION_KEY);
  const file = join(config.DATA_DIR, 'encryption.key');
  try {
    return parseEncryptionKey((await readFile(file, 'utf8')).trim());
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const key = randomBytes(32);
  await mkdir(config.DATA_DIR, { recursive: true });
  await writeFile(file, key.toString('base64'), { mode: 0o600, flag: 'wx' }).catch(async (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  return parseEncryptionKey((await readFile(file, 'utf8')).trim());
}
