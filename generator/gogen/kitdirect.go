package gogen

import (
	"fmt"
	"path"
	"strings"

	"github.com/dave/jennifer/jen"
)

// kitDirect renders the kit with its package doc, wire and the methods of
// the facts written directly (gofile), its other declarations by
// jennifer; ok is false when the kit has a form it does not write (facts
// published in several versions, or reused from another package), and
// Kit renders it with jennifer alone.
func (k *kitEmitter) kitDirect(newJen func() *jen.File) (out []byte, ok bool) {
	if dual, down := k.dualPublish(); dual || down {
		return nil, false
	}
	for _, fact := range k.m.Facts {
		if fact.GoPackage() != "" || fact.Import == nil && fact.PublishesOlder() {
			return nil, false
		}
	}
	s := new(scratch)
	g := newGofile(&s.direct, s, newJen)
	g.names = map[string]string{k.pkg: k.m.Package}
	g.aliased = map[string]bool{k.pkg: path.Base(k.pkg) != k.m.Package}
	doc := k.packageDoc(g)
	g.jen(k.genHead)
	k.wireDirect(g)
	g.jen(k.genNames)
	pkg := g.q(k.pkg, "")
	wt := g.q(warrentestPath, "")
	for _, fact := range k.m.Facts {
		t := pkg + fact.Type.GoName
		g.decl()
		g.doc(0, docLines(fmt.Sprintf("%s publishes v; an error fails the test.", fact.PublishName())))
		g.line(0, "func (k *"+kitType+") "+fact.PublishName()+"(v "+t+") string {")
		g.line(1, "k.T().Helper()")
		g.line(1, "return "+wt+"Publish(k.Bus, "+pkg+fact.VarName()+", &v)")
		g.line(0, "}")
	}
	g.jen(k.genStarts)
	if !g.ok {
		return nil, false
	}
	g.pkgDoc = doc
	return g.bytes([]string{GeneratedHeader, commentLine("source: warren.json")}, KitDir(k.m.Package)), true
}

// wireDirect is genWire for a kit without facts of several versions.
func (k *kitEmitter) wireDirect(g *gofile) {
	pkg := g.q(k.pkg, "")
	wt := g.q(warrentestPath, "")
	g.decl()
	g.comment(0, "wire tells b the Go type of each fact, so that Published can decode them.")
	g.line(0, "func "+kitWire+"(b *"+wt+"Bus) *"+kitType+" {")
	for _, fact := range k.m.Facts {
		g.line(1, wt+"Register["+pkg+fact.Type.GoName+"](b, "+pkg+fact.VarName()+")")
	}
	g.line(1, "return &"+kitType+"{b}")
	g.line(0, "}")
}

// packageDoc is the package doc's comment lines as gofmt leaves them: the
// example's lines, an indented block, each "//" and a tab (gofmt's form
// of a code block); any other line that gofmt would reformat gives up.
func (k *kitEmitter) packageDoc(g *gofile) []string {
	var lines []string
	for _, l := range docLines(k.docParagraphs()...) {
		if strings.HasPrefix(l, "\t") {
			lines = append(lines, "//"+sanitize(l))
			continue
		}
		c := commentLine(l)
		if !plainComment(c) {
			g.ok = false
		}
		lines = append(lines, c)
	}
	return lines
}
