package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/warrenbus/warren/internal/synthetic"
)

// input is the synthetic input of one fact count, for every side.
type input struct {
	facts   int
	schemas string   // the schema directory (warren's input)
	files   []string // its JSON Schema files, shared definition first (go-jsonschema's input)
	doc     string   // the AsyncAPI document, adapted (asyncapi-codegen's input)
}

// writeInput writes the inputs of n facts below dir: the synthetic schema
// directory, and the AsyncAPI document that warren (the binary measured)
// exports for it, adapted for asyncapi-codegen.
func writeInput(dir, warren string, n int) (input, error) {
	in := input{facts: n, schemas: filepath.Join(dir, "schemas"), doc: filepath.Join(dir, "asyncapi-codegen.json")}
	if err := os.MkdirAll(in.schemas, 0o755); err != nil {
		return in, err
	}
	if err := synthetic.Write(in.schemas, n); err != nil {
		return in, err
	}
	in.files = append(in.files, filepath.Join(in.schemas, "common", "money.json"))
	for i := range n {
		in.files = append(in.files, filepath.Join(in.schemas, synthetic.FactPath(i)))
	}
	exported := filepath.Join(dir, "asyncapi.json")
	if out, err := command(warren, "asyncapi", "--out", exported, in.schemas).CombinedOutput(); err != nil {
		return in, fmt.Errorf("warren asyncapi: %v\n%s", err, out)
	}
	doc, err := os.ReadFile(exported)
	if err != nil {
		return in, err
	}
	adapted, err := adaptAsyncAPI(doc)
	if err != nil {
		return in, fmt.Errorf("%s: %w", exported, err)
	}
	return in, os.WriteFile(in.doc, adapted, 0o644)
}

// adaptAsyncAPI changes what `warren asyncapi` writes, as little as
// asyncapi-codegen (v0.46.3) needs to read the document and to write code
// that compiles:
//   - a type list ["string", "null"] becomes "string": it reads "type" as a
//     string only (the property is optional, so it still becomes a pointer);
//   - a boolean additionalProperties is dropped: it reads that keyword as a
//     schema only;
//   - an operation's message reference into its channel
//     (#/channels/C/messages/M) is replaced by the reference that channel
//     message holds (#/components/messages/M): it names a type after the
//     channel reference and never declares it;
//   - an integer message header (x-fact-version) becomes a string header:
//     it converts header bytes to other types with a conversion that does
//     not compile.
func adaptAsyncAPI(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	walkSchemas(v)
	channels, _ := v["channels"].(map[string]any)
	ops, _ := v["operations"].(map[string]any)
	for name, op := range ops {
		msgs, _ := op.(map[string]any)["messages"].([]any)
		for _, m := range msgs {
			m, _ := m.(map[string]any)
			ref, _ := m["$ref"].(string)
			target, err := channelMessageRef(channels, ref)
			if err != nil {
				return nil, fmt.Errorf("operation %s: %w", name, err)
			}
			m["$ref"] = target
		}
	}
	components, _ := v["components"].(map[string]any)
	messages, _ := components["messages"].(map[string]any)
	for _, m := range messages {
		headers, _ := m.(map[string]any)["headers"].(map[string]any)
		props, _ := headers["properties"].(map[string]any)
		for _, p := range props {
			p, _ := p.(map[string]any)
			if p["type"] != "integer" {
				continue
			}
			p["type"] = "string"
			if c, ok := p["const"].(json.Number); ok {
				p["const"] = c.String()
			}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// walkSchemas applies the two schema changes of adaptAsyncAPI everywhere.
func walkSchemas(v any) {
	switch v := v.(type) {
	case map[string]any:
		if types, ok := v["type"].([]any); ok {
			var kept []any
			for _, t := range types {
				if t != "null" {
					kept = append(kept, t)
				}
			}
			if len(kept) == 1 {
				v["type"] = kept[0]
			} else {
				v["type"] = kept
			}
		}
		if _, ok := v["additionalProperties"].(bool); ok {
			delete(v, "additionalProperties")
		}
		for _, e := range v {
			walkSchemas(e)
		}
	case []any:
		for _, e := range v {
			walkSchemas(e)
		}
	}
}

// channelMessageRef returns the reference that the channel message ref
// points at holds, or ref itself when it points elsewhere.
func channelMessageRef(channels map[string]any, ref string) (string, error) {
	rest, ok := strings.CutPrefix(ref, "#/channels/")
	if !ok {
		return ref, nil
	}
	channel, msg, ok := strings.Cut(rest, "/messages/")
	if !ok {
		return "", fmt.Errorf("reference %q: want #/channels/C/messages/M", ref)
	}
	c, _ := channels[unescapePointer(channel)].(map[string]any)
	msgs, _ := c["messages"].(map[string]any)
	m, _ := msgs[unescapePointer(msg)].(map[string]any)
	target, _ := m["$ref"].(string)
	if target == "" {
		return "", fmt.Errorf("reference %q: no such channel message with a $ref", ref)
	}
	return target, nil
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}
