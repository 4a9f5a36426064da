/**
 * HTML built with a tagged template: every interpolated value is escaped unless it is itself
 * `Html` (a fragment built the same way), so markup can only come from the templates.
 */
export class Html {
  constructor(readonly value: string) {}

  toString(): string {
    return this.value;
  }
}

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);
}

type Value = Html | string | number | null | undefined | false | readonly Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return new Html(out);
}

/**
 * An address or a path with a line break allowed after each `/` and before each `?` and `&`:
 * it wraps at its parts in a narrow column, where a table would otherwise be as wide as the
 * whole address, and not inside a part.
 */
export function breakable(text: string): Html {
  return new Html(
    text
      .split(/(?<=\/)(?=[^/])|(?=[?&])/)
      .map(escapeHtml)
      .join('<wbr>'),
  );
}
