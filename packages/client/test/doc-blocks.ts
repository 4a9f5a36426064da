/**
 * Type-checks the TypeScript and JavaScript blocks of a Markdown file as a user's project
 * would: `strict`, `exactOptionalPropertyTypes`, NodeNext, Node's types, and
 * `@animal-store/client` resolved through its `exports` to the built package (dist/). Each block
 * is a module of its own (`ts` as .mts, `js` as .mjs, or .cjs when it calls `require`), placed
 * beside the Markdown file without being written, so packages resolve from there.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import ts from 'typescript';

export interface Block {
  /** The fence's language: ts, typescript, js, javascript. */
  lang: string;
  /** Line of the first line of code in the Markdown file (1-based). */
  line: number;
  code: string;
}

const LANGS = new Set(['ts', 'typescript', 'js', 'javascript']);

/** The TypeScript and JavaScript fenced blocks of a Markdown text. */
export function codeBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[i] ?? '');
    if (!open) continue;
    const [, fence = '```', lang = ''] = open;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !(lines[end] ?? '').startsWith(fence)) end++;
    if (LANGS.has(lang)) {
      blocks.push({ lang, line: start + 1, code: lines.slice(start, end).join('\n') });
    }
    i = end;
  }
  return blocks;
}

export const OPTIONS: ts.CompilerOptions = {
  strict: true,
  exactOptionalPropertyTypes: true,
  noImplicitOverride: true,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2023.d.ts'],
  types: ['node'],
  allowJs: true,
  checkJs: true,
  noEmit: true,
  skipLibCheck: true,
};

/** The compiler's complaints about these script files, with the same options as the blocks. */
export function typeCheckFiles(paths: string[]): string[] {
  const program = ts.createProgram(paths, OPTIONS);
  return ts.getPreEmitDiagnostics(program).map(format(() => undefined, ''));
}

/** `file:line:column TScode message`; a block's line counted in its Markdown file. */
function format(blockOf: (file: string) => Block | undefined, markdownFile: string) {
  return (diagnostic: ts.Diagnostic): string => {
    const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    if (!diagnostic.file || diagnostic.start === undefined) return `TS${diagnostic.code} ${text}`;
    const block = blockOf(diagnostic.file.fileName);
    const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
    const where = block
      ? `${markdownFile}:${block.line + line}:${character + 1}`
      : `${diagnostic.file.fileName}:${line + 1}:${character + 1}`;
    return `${where} TS${diagnostic.code} ${text}`;
  };
}

/**
 * The compiler's complaints about each block of `markdownFile` (or of `blocks`, given), as
 * `README.md:12:5 TS2322 …` lines; none when every block type-checks.
 */
export function typeCheckBlocks(
  markdownFile: string,
  blocks: Block[] = codeBlocks(readFileSync(markdownFile, 'utf8')),
): string[] {
  const directory = dirname(markdownFile);
  const files = new Map<string, Block>();
  blocks.forEach((block, i) => {
    const js = block.lang === 'js' || block.lang === 'javascript';
    const extension = js ? (/\brequire\(/.test(block.code) ? 'cjs' : 'mjs') : 'mts';
    files.set(join(directory, `.doc-block-${i + 1}.${extension}`), block);
  });
  const host = ts.createCompilerHost(OPTIONS, true);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (name) => files.has(name) || fileExists.call(host, name);
  host.readFile = (name) => files.get(name)?.code ?? readFile.call(host, name);
  host.getSourceFile = (name, language, ...rest) => {
    const block = files.get(name);
    return block
      ? ts.createSourceFile(name, block.code, language, true)
      : getSourceFile.call(host, name, language, ...rest);
  };
  const program = ts.createProgram([...files.keys()], OPTIONS, host);
  return ts.getPreEmitDiagnostics(program).map(format((file) => files.get(file), markdownFile));
}
