// Checks an AsyncAPI document with the AsyncAPI initiative's own tools and
// prints what the parser understood, for the Go test to assert on.
//
//   node validate.mjs DOCUMENT.json...
//
// 1. The document validates against the official AsyncAPI 3.0.0 JSON
//    Schema from @asyncapi/specs (with ajv, as the parser itself does).
// 2. @asyncapi/parser parses it with its default rules and reports no
//    error-level diagnostic.
// Exit 1 with the problems on stderr otherwise. On success stdout holds,
// per file, a JSON summary: channels, operations and messages as the
// parser sees them. Several files share one start of node, which is slow.
import { readFile } from 'node:fs/promises';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import specs from '@asyncapi/specs';
import { Parser } from '@asyncapi/parser';

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node validate.mjs DOCUMENT.json...');
  process.exit(2);
}

// The bundled schema carries the draft-07 meta-schema among its
// definitions; ajv must not add its own copy of it as well.
const ajv = new Ajv({ allErrors: true, strict: false, meta: false, validateSchema: false });
addFormats(ajv);
const validate = ajv.compile(specs.schemas['3.0.0']);
const parser = new Parser();
const severities = ['error', 'warning', 'information', 'hint'];

let failed = false;
const summaries = {};
for (const file of files) {
  const summary = await check(file);
  if (summary) {
    summaries[file] = summary;
  } else {
    failed = true;
  }
}
if (failed) {
  process.exit(1);
}
console.log(JSON.stringify(summaries, null, 2));

// check validates one document and returns the parser's view of it, or
// null after printing why it is not valid.
async function check(file) {
  const text = await readFile(file, 'utf8');
  let ok = true;
  if (!validate(JSON.parse(text))) {
    ok = false;
    for (const e of validate.errors) {
      console.error(`${file}: schema: ${e.instancePath || '/'}: ${e.message} ${JSON.stringify(e.params)}`);
    }
  }
  const { document, diagnostics } = await parser.parse(text);
  for (const d of diagnostics) {
    if (d.severity === 0) {
      ok = false;
      console.error(`${file}: parser error: /${(d.path || []).join('/')}: ${d.message} (${d.code})`);
    }
  }
  if (!ok || !document) {
    return null;
  }
  return {
    version: document.version(),
    title: document.info().title(),
    channels: document.channels().all().map((c) => ({
      id: c.id(),
      address: c.address(),
      messages: c.messages().all().map((m) => m.id()),
      amqp: c.bindings().get('amqp')?.value() ?? null,
    })),
    operations: document.operations().all().map((o) => ({
      id: o.id(),
      action: o.action(),
      channels: o.channels().all().map((c) => c.address()),
      messages: o.messages().all().map((m) => m.id()),
      amqp: o.bindings().get('amqp')?.value() ?? null,
    })),
    messages: document.messages().all().map((m) => ({
      id: m.id(),
      payloadType: m.payload()?.type() ?? null,
    })),
    // Warnings of the parser's rules (style advice) are counted, not fatal.
    warnings: diagnostics.filter((d) => d.severity === 1).map((d) => `${d.code}: ${d.message}`),
  };
}
