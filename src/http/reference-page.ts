import { Marked, type Tokens } from 'marked';
import { escapeHtml, Html, html } from '../html.js';

/**
 * The docs page (/docs): the OpenAPI document as one page of HTML, made here once a process, so
 * the reference shows as it arrives, with no script (docs/decisions/0082-docs-page-rendered.md).
 * The explorer, Scalar with its "Test Request", is at /docs/try/; each operation links to its
 * place there (`#tag/<tag>/<METHOD><path>`, as Scalar 1.46 names it: a test follows one).
 * Anchors: `op/<operationId>`, `tag/<tag>`, `schema/<Name>`, `webhook/<type>`, and each heading
 * of the description as `description/<slug>` and `<slug>` (the `Deprecation` links name one).
 */

interface Schema {
  $ref?: string;
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  const?: unknown;
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  description?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  maxItems?: number;
}
interface Parameter {
  $ref?: string;
  name?: string;
  in?: string;
  required?: boolean;
  deprecated?: boolean;
  description?: string;
  schema?: Schema;
}
interface Content {
  description?: string;
  required?: boolean;
  content?: Record<string, { schema?: Schema }>;
}
interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  deprecated?: boolean;
  parameters?: Parameter[];
  requestBody?: Content;
  responses?: Record<string, Content & { $ref?: string }>;
  servers?: Array<{ url: string }>;
}
type PathItem = Record<string, Operation> & { servers?: Array<{ url: string }> };
export interface ReferenceDocument {
  info: { title: string; version: string; description?: string };
  servers?: Array<{ url: string }>;
  tags?: Array<{ name: string; description?: string }>;
  paths?: Record<string, PathItem>;
  webhooks?: Record<string, PathItem>;
  components?: {
    schemas?: Record<string, Schema>;
    parameters?: Record<string, Parameter>;
    responses?: Record<string, Content>;
  };
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
const slug = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
const refName = (ref: string) => ref.slice(ref.lastIndexOf('/') + 1);
const pathOf = (url: string | undefined) =>
  url === undefined ? '' : new URL(url, 'http://server').pathname.replace(/\/$/, '');

export function referencePage(doc: ReferenceDocument): string {
  const { schemas = {}, parameters = {}, responses = {} } = doc.components ?? {};
  const headings: Array<{ id: string; text: string }> = [];
  const markdown = new Marked({
    renderer: {
      heading(this: { parser: { parseInline(tokens: Tokens.Generic[]): string } }, heading) {
        const id = slug(heading.text);
        if (heading.depth === 2) headings.push({ id: `description/${id}`, text: heading.text });
        const inner = this.parser.parseInline(heading.tokens);
        return `<h${heading.depth} id="description/${id}"><a id="${id}"></a>${inner}</h${heading.depth}>\n`;
      },
    },
  });
  // Our own document's text, written in this repository: its markdown is trusted as HTML.
  const md = (text: string | undefined): Html | '' =>
    text ? raw(markdown.parse(text, { async: false })) : '';
  const inline = (text: string | undefined): Html | '' =>
    text ? raw(markdown.parseInline(text, { async: false })) : '';

  const typeOf = (schema: Schema | undefined): Html => {
    if (!schema) return html`any`;
    if (schema.$ref) {
      const name = refName(schema.$ref);
      return html`<a href="#schema/${name}"><code>${name}</code></a>`;
    }
    const union = schema.oneOf ?? schema.anyOf;
    if (union) return join(union.map(typeOf), ' or ');
    if (schema.const !== undefined) return html`<code>${JSON.stringify(schema.const)}</code>`;
    if (schema.enum) {
      return html`one of ${join(
        schema.enum.map((value) => html`<code>${JSON.stringify(value)}</code>`),
        ', ',
      )}`;
    }
    const types = [schema.type ?? 'object'].flat();
    return join(
      types.map((type) =>
        type === 'array'
          ? html`array of ${typeOf(schema.items)}`
          : html`${type}${schema.format ? ` (${schema.format})` : ''}`,
      ),
      ' or ',
    );
  };
  const limits = (schema: Schema | undefined): string => {
    if (!schema) return '';
    const range = (low: number | undefined, high: number | undefined, unit: string) =>
      low === undefined && high === undefined
        ? ''
        : ` ${low ?? 0}${high === undefined ? '+' : `–${high}`}${unit}`;
    return [
      range(schema.minLength, schema.maxLength, ' characters'),
      schema.type === 'integer' && schema.maximum !== undefined && schema.maximum > 2 ** 31
        ? range(schema.minimum, undefined, '')
        : range(schema.minimum, schema.maximum, ''),
      schema.maxItems === undefined ? '' : ` at most ${schema.maxItems} items`,
    ].join('');
  };

  const resolve = (schema: Schema | undefined): Schema =>
    (schema?.$ref ? schemas[refName(schema.$ref)] : schema) ?? {};
  const fields = (schema: Schema): Html | '' => {
    const entries = Object.entries(schema.properties ?? {});
    if (entries.length === 0) return '';
    return html`<table class="fields"><thead><tr><th>Field</th><th>Type</th><th>Description</th></tr></thead><tbody>${entries.map(
      ([name, field]) =>
        html`<tr><td><code>${name}</code>${
          schema.required?.includes(name) ? html` <span class="required">required</span>` : ''
        }</td><td>${typeOf(field)}<span class="limits">${limits(field)}</span></td><td>${inline(
          field.description,
        )}</td></tr>`,
    )}</tbody></table>`;
  };
  const bodyOf = (content: Content | undefined) => content?.content?.['application/json']?.schema;

  const operation = (path: string, base: string, method: string, op: Operation): Html => {
    const params = (op.parameters ?? []).map((p) =>
      p.$ref ? (parameters[refName(p.$ref)] ?? {}) : p,
    );
    const body = op.requestBody;
    const tag = op.tags?.[0] ?? '';
    return html`<section class="operation" id="op/${op.operationId}">
<h3>${op.summary ?? op.operationId}${op.deprecated ? html` <span class="deprecated">deprecated</span>` : ''}</h3>
<p class="endpoint"><span class="method ${method}">${method.toUpperCase()}</span> <code>${base}${path}</code>
<a class="try" href="/docs/try/#tag/${slug(tag)}/${method.toUpperCase()}${path}">Try it</a></p>
${md(op.description)}
${
  params.length > 0 &&
  html`<h4>Parameters</h4><table class="fields"><thead><tr><th>Name</th><th>In</th><th>Type</th><th>Description</th></tr></thead><tbody>${params.map(
    (p) =>
      html`<tr><td><code>${p.name}</code>${p.required ? html` <span class="required">required</span>` : ''}</td><td>${p.in}</td><td>${typeOf(
        p.schema,
      )}<span class="limits">${limits(p.schema)}</span></td><td>${inline(p.description)}</td></tr>`,
  )}</tbody></table>`
}
${
  body &&
  html`<h4>Body${body.required ? '' : ' (may be left out)'}: ${typeOf(bodyOf(body))}</h4>${inline(body.description)}${fields(resolve(bodyOf(body)))}`
}
<h4>Responses</h4>
<table class="responses"><tbody>${Object.entries(op.responses ?? {}).map(([status, given]) => {
      const answer = given.$ref ? (responses[refName(given.$ref)] ?? {}) : given;
      const schema = bodyOf(answer);
      return html`<tr><td class="status s${status[0]}">${status}</td><td>${inline(answer.description)}${
        schema ? html` <span class="returns">Body: ${typeOf(schema)}</span>` : ''
      }</td></tr>`;
    })}</tbody></table>
</section>`;
  };

  const operations = (doc.tags ?? []).map((tag) => {
    const ops: Array<{ path: string; base: string; method: string; op: Operation }> = [];
    for (const [path, item] of Object.entries(doc.paths ?? {})) {
      for (const method of METHODS) {
        const op = item[method];
        if (op?.tags?.[0] !== tag.name) continue;
        const server = op.servers?.[0] ?? item.servers?.[0] ?? doc.servers?.[0];
        ops.push({ path, base: pathOf(server?.url), method, op });
      }
    }
    return { tag, ops };
  });
  const webhooks = Object.entries(doc.webhooks ?? {}).flatMap(([type, item]) =>
    item.post ? [{ type, op: item.post }] : [],
  );
  const deliveryHeaders = (webhooks[0]?.op.parameters ?? []).map((p) =>
    p.$ref ? (parameters[refName(p.$ref)] ?? {}) : p,
  );

  const description = md(doc.info.description);
  const main = html`<h1>${doc.info.title} <span class="version">${doc.info.version}</span></h1>
<p class="links"><a href="/docs/try/">Explorer, to try each call</a> · <a href="/v1/openapi.json">OpenAPI document</a> · <a href="/v1/postman.json">Postman collection</a> · <a href="/portal">Developer portal</a></p>
${description}
${operations.map(
  ({ tag, ops }) =>
    html`<section id="tag/${slug(tag.name)}"><h2>${tag.name}</h2>${inline(tag.description)}${ops.map(
      ({ path, base, method, op }) => operation(path, base, method, op),
    )}</section>`,
)}
${
  webhooks.length > 0 &&
  html`<section id="webhooks"><h2>Webhooks</h2><p>Each event is POSTed to every enabled endpoint that wants its type, signed, with these headers:</p>
<table class="fields"><tbody>${deliveryHeaders.map(
    (p) => html`<tr><td><code>${p.name}</code></td><td>${inline(p.description)}</td></tr>`,
  )}</tbody></table>${webhooks.map(
    ({ type, op }) =>
      html`<section class="operation" id="webhook/${type}"><h3><code>${type}</code></h3>${md(
        op.description,
      )}<p>Body: ${typeOf(bodyOf(op.requestBody))}</p></section>`,
  )}</section>`
}
<section id="schemas"><h2>Schemas</h2>${Object.entries(schemas).map(
    ([name, schema]) =>
      html`<section class="schema" id="schema/${name}"><h3>${name}</h3>${md(schema.description)}${
        schema.properties
          ? fields(schema)
          : html`<p>${typeOf({ ...schema, description: undefined })}</p>`
      }</section>`,
  )}</section>`;

  const nav = html`<nav id="contents" aria-label="Contents"><ul>
<li><a href="#">Introduction</a><ul>${headings.map((h) => html`<li><a href="#${h.id}">${h.text}</a></li>`)}</ul></li>
${operations.map(
  ({ tag, ops }) =>
    html`<li><a href="#tag/${slug(tag.name)}">${tag.name}</a><ul>${ops.map(
      ({ method, op }) =>
        html`<li><a href="#op/${op.operationId}"><span class="method ${method}">${method.toUpperCase()}</span> ${op.summary}</a></li>`,
    )}</ul></li>`,
)}
${webhooks.length > 0 && html`<li><a href="#webhooks">Webhooks</a></li>`}
<li><a href="#schemas">Schemas</a></li>
</ul></nav>`;

  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(doc.info.title)}: API reference</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<style>${STYLE}</style>
</head>
<body>
<a class="skip" href="#contents">Contents</a>
<main>
${main}
</main>
${nav}
</body>
</html>
`;
}

/** Markup made by marked from our own text. */
const raw = (markup: string) => new Html(markup);

function join(parts: readonly Html[], separator: string): Html {
  return parts.slice(1).reduce((all, part) => html`${all}${separator}${part}`, parts[0] ?? html``);
}

const STYLE = `
:root { color-scheme: light dark; --line: #8884; --muted: #777; --code: #8881;
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; }
body { margin: 0; display: grid; grid-template-columns: 17rem minmax(0, 1fr); }
main { grid-column: 2; grid-row: 1; }
.skip { display: none; }
nav { grid-column: 1; grid-row: 1; align-self: start; position: sticky; top: 0; height: 100vh; overflow-y: auto; padding: 1rem;
  border-right: 1px solid var(--line); font-size: .875rem; box-sizing: border-box; }
nav ul { list-style: none; margin: 0; padding: 0; }
nav ul ul { margin: .25rem 0 .75rem .5rem; }
nav a { display: block; padding: .125rem 0; color: inherit; text-decoration: none; }
nav a:hover { text-decoration: underline; }
main { padding: 1rem 2rem 4rem; max-width: 60rem; min-width: 0; overflow-wrap: anywhere; }
h1 .version { font-size: 1rem; color: var(--muted); font-weight: normal; }
h2 { margin-top: 3rem; border-bottom: 1px solid var(--line); }
.operation, .schema { margin: 2rem 0; padding-top: 1rem; border-top: 1px solid var(--line); }
code { background: var(--code); padding: .05em .3em; border-radius: 3px; font-size: .9em; }
pre { background: var(--code); padding: .75rem; overflow-x: auto; }
pre code { background: none; padding: 0; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0; font-size: .9rem; }
th, td { text-align: left; vertical-align: top; padding: .35rem .5rem; border-bottom: 1px solid var(--line); }
td:first-child { white-space: nowrap; }
.method { display: inline-block; min-width: 3.5em; font: bold .75rem/1.6 ui-monospace, monospace;
  text-align: center; border-radius: 3px; color: #fff; background: #666; }
.method.get { background: #2b6cb0; } .method.post { background: #2f855a; }
.method.patch { background: #b7791f; } .method.put { background: #b7791f; }
.method.delete { background: #c53030; }
.endpoint { font-size: 1rem; } .endpoint .try { margin-left: 1rem; font-size: .875rem; }
.required { color: #c53030; font-size: .75rem; }
.deprecated { color: #b7791f; font-size: .8rem; border: 1px solid; border-radius: 3px; padding: 0 .3em; }
.limits, .returns { display: block; color: var(--muted); font-size: .8rem; }
.status { font-weight: bold; } .s2 { color: #2f855a; } .s4 { color: #b7791f; } .s5 { color: #c53030; }
.links { font-size: .9rem; }
@media (max-width: 48rem) {
  body { display: block; }
  .skip { display: block; padding: .5rem 1rem; }
  nav { position: static; border-top: 1px solid var(--line); height: auto; border-right: 0; border-bottom: 1px solid var(--line); }
  main { padding: 1rem; }
  td:first-child { white-space: normal; }
  th, td { padding: .3rem .25rem; }
}
`;
