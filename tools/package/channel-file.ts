/**
 * electron-builder's channel files (latest.yml, latest-mac.yml, latest-linux.yml, `<channel>*.yml`) as the
 * release tools read and write them: the parts they need checked (builder-util-runtime's UpdateInfo:
 * version, files with url and sha512), everything else kept as it was.
 */
import yaml from 'js-yaml';
import { z } from 'zod';

export const ChannelFile = z.looseObject({
  version: z.string().min(1),
  files: z.array(z.looseObject({ url: z.string().min(1), sha512: z.string().min(1) })).min(1),
  path: z.string().optional(),
  sha512: z.string().optional(),
  stagingPercentage: z.unknown().optional(),
});
export type ChannelFile = z.infer<typeof ChannelFile>;

/** The channel file in `text`, or the error `refuse` makes of what is wrong with it (naming `source`). */
export function parseChannelFile(text: string, source: string, refuse: (message: string) => Error): ChannelFile {
  let doc: unknown;
  try {
    doc = yaml.load(text);
  } catch (e) {
    throw refuse(`${source} is not YAML: ${(e as Error).message.split('\n')[0] ?? ''}`);
  }
  const parsed = ChannelFile.safeParse(doc);
  if (!parsed.success)
    throw refuse(
      `${source} is not an electron-builder channel file (version and files with url and sha512): ${parsed.error.issues[0]?.path.join('.') ?? ''}`,
    );
  return parsed.data;
}

/** A channel file's text, as electron-builder writes it (no line folding, no YAML references). */
export function dumpChannelFile(doc: Record<string, unknown>): string {
  return yaml.dump(doc, { lineWidth: -1, noRefs: true });
}
