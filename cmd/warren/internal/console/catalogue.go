package console

import (
	"bytes"
	"fmt"
	"regexp"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// renderCatalogue turns the Markdown of `warren docs` into an HTML
// fragment with goldmark (a CommonMark renderer with GitHub's tables), so
// the console shows the same catalogue the repository commits. goldmark
// escapes all text; of raw HTML only the catalogue's own anchors
// (<a id="fact-order.placed"></a>) pass, and the Mermaid diagram, which
// would need a script from elsewhere, becomes the console's own drawing.
func renderCatalogue(md []byte) ([]byte, error) {
	if len(md) == 0 {
		return []byte("<p>No catalogue.</p>"), nil
	}
	g := goldmark.New(
		goldmark.WithExtensions(extension.Table),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(safeHTML{}, 100))),
	)
	var buf bytes.Buffer
	if err := g.Convert(md, &buf); err != nil {
		return nil, fmt.Errorf("render the catalogue: %w", err)
	}
	return buf.Bytes(), nil
}

// anchor is the only raw HTML the catalogue template writes.
var (
	anchor       = regexp.MustCompile(`^<a id="[A-Za-z0-9._#:-]+"></a>\s*$`)
	inlineAnchor = regexp.MustCompile(`^(<a id="[A-Za-z0-9._#:-]+">|</a>)$`)
)

// safeHTML renders raw HTML blocks and inline HTML, and Mermaid blocks,
// in place of goldmark's own renderers.
type safeHTML struct{}

func (safeHTML) RegisterFuncs(r renderer.NodeRendererFuncRegisterer) {
	r.Register(ast.KindHTMLBlock, func(w util.BufWriter, source []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		var block []byte
		lines := n.Lines()
		for i := range lines.Len() {
			seg := lines.At(i)
			block = append(block, seg.Value(source)...)
		}
		if anchor.Match(block) {
			_, _ = w.Write(block)
		}
		return ast.WalkSkipChildren, nil
	})
	r.Register(ast.KindRawHTML, func(w util.BufWriter, source []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkSkipChildren, nil
		}
		var tag []byte
		segs := n.(*ast.RawHTML).Segments
		for i := range segs.Len() {
			seg := segs.At(i)
			tag = append(tag, seg.Value(source)...)
		}
		if inlineAnchor.Match(tag) {
			_, _ = w.Write(tag)
		}
		return ast.WalkSkipChildren, nil
	})
	r.Register(ast.KindFencedCodeBlock, func(w util.BufWriter, source []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		code := n.(*ast.FencedCodeBlock)
		if string(code.Language(source)) == "mermaid" {
			_, _ = w.WriteString(`<p><img class="topology" src="api/topology.svg" alt="The topology: exchanges, queues, bindings and retry tiers"></p>` + "\n")
			return ast.WalkSkipChildren, nil
		}
		_, _ = w.WriteString("<pre><code>")
		lines := code.Lines()
		for i := range lines.Len() {
			seg := lines.At(i)
			_, _ = w.Write(util.EscapeHTML(seg.Value(source)))
		}
		_, _ = w.WriteString("</code></pre>\n")
		return ast.WalkSkipChildren, nil
	})
}
