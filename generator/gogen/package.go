package gogen

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dave/jennifer/jen"

	"github.com/warrenbus/warren/generator/model"
)

// genPackage writes the package doc and the compile-time check that the
// runtime supports this generated code.
func (e *emitter) genPackage(f *jen.File) {
	doc := fmt.Sprintf("Package %s holds the facts and consumers declared in a warren schema directory: one Go type per fact, its JSON Schema for validation, and one handler interface per consumer.", e.m.Package)
	for _, l := range commentLines(doc) {
		f.PackageComment(commentLine(l))
	}
	if e.m.ManifestDescription != "" {
		f.PackageComment("//")
		for _, l := range commentLines(e.m.ManifestDescription) {
			f.PackageComment(commentLine(l))
		}
	}
	for _, c := range docComment(fmt.Sprintf("These constants fail to compile when the warren runtime does not support version %d of the generated-code contract: upgrade the github.com/warrenbus/warren module, or regenerate with the warren version your go.mod requires.", ContractVersion)) {
		f.Add(c)
	}
	f.Const().Defs(
		jen.Id("_").Op("=").Qual(schemasetPath, "EnforceVersion").Call(jen.Lit(ContractVersion).Op("-").Qual(schemasetPath, "MinVersion")),
		jen.Id("_").Op("=").Qual(schemasetPath, "EnforceVersion").Call(jen.Qual(schemasetPath, "MaxVersion").Op("-").Lit(ContractVersion)),
	)
}

// genSchemas embeds every schema file the facts need, compacted, as string
// literals (jen quotes them, so no schema text can leave its string).
func (e *emitter) genSchemas(f *jen.File) {
	for _, c := range docComment(schemaSetVar + " holds the JSON Schemas the types of this package were generated from, keyed by their path in the schema directory; values are validated against them.") {
		f.Add(c)
	}
	f.Var().Id(schemaSetVar).Op("=").Qual(schemasetPath, "New").Call(jen.Map(jen.String()).String().Values(jen.DictFunc(func(d jen.Dict) {
		for _, s := range e.m.Schemas {
			d[jen.Lit(s.Path)] = stringLit(string(s.JSON))
		}
	})))
}

// genConsumers writes one handler interface per consumer.
func (e *emitter) genConsumers(f *jen.File) {
	for _, c := range e.m.Consumers {
		e.genConsumerInterface(f, c)
	}
}

func (e *emitter) genConsumerInterface(f *jen.File, c *model.Consumer) {
	for _, l := range docComment(
		fmt.Sprintf("%s handles the facts that consumer %q receives: one method per fact its bindings match. A method that returns an error marked with runtime.Permanent sends the message straight to the poison queue; any other error is retried.", c.HandlerName(), c.Name),
		c.Description,
		"Bindings: "+strings.Join(c.Bindings, ", "),
	) {
		f.Add(l)
	}
	f.Type().Id(c.HandlerName()).InterfaceFunc(func(g *jen.Group) {
		for i, fact := range c.Facts {
			if i > 0 {
				g.Line()
			}
			for _, l := range docComment(fmt.Sprintf("%s handles a %s fact (routing key %s).", fact.MethodName(), fact.GoName, fact.RoutingKey)) {
				g.Add(l)
			}
			g.Id(fact.MethodName()).Params(
				jen.Id("ctx").Qual(contextPath, "Context"),
				jen.Id("d").Qual(runtimePath, "Delivery"),
				jen.Id("fact").Id(fact.Type.GoName),
			).Error()
		}
	})
}

// stringLit writes s as a raw string literal when it can (JSON is easier
// to read without escaped quotes), else as a quoted one. A raw literal
// cannot hold a back quote, and Go source cannot hold invalid UTF-8, NUL or
// a byte order mark; strconv-quoting escapes all of them.
func stringLit(s string) jen.Code {
	if utf8.ValidString(s) && !strings.ContainsAny(s, "`\x00\r\uFEFF") {
		return jen.Op("`" + s + "`")
	}
	return jen.Lit(s)
}
