package docgen

import (
	"fmt"
	"strings"

	"github.com/warrenbus/warren/generator/model"
)

// requestView is one request in the catalogue: its key, its types (linked
// to the Types section) and the responder that answers it.
type requestView struct {
	Key, Anchor, Source, Description string
	Deprecated                       bool
	Method                           string // the Requester method and the responder's
	Type, Reply                      typeRef
	Responder                        consumerRef
}

type typeRef struct{ GoName, Anchor string }

type responderView struct {
	Name, Anchor, Description string
	Interface                 string
	Queue, Exchange           string
	Prefetch, Concurrency     int
	Requests                  []handledFact
}

func responderAnchor(name string) string    { return "responder-" + name }
func requestAnchor(r *model.Request) string { return "request-" + r.Key }
func typeRefOf(t *model.Type) typeRef       { return typeRef{t.GoName, typeAnchor(t)} }
func responderRef(rs *model.Responder) consumerRef {
	return consumerRef{rs.Name, responderAnchor(rs.Name)}
}

// addRequests fills the catalogue's Requests and Responders.
func (c *catalogue) addRequests(m *model.Model) {
	c.RequestsExchange = m.Exchanges.Requests
	for _, r := range m.Requests {
		c.Requests = append(c.Requests, requestView{
			Key: r.Key, Anchor: requestAnchor(r), Source: r.Source, Description: r.Description,
			Deprecated: r.Deprecated, Method: r.MethodName(),
			Type: typeRefOf(r.Type), Reply: typeRefOf(r.Reply), Responder: responderRef(r.Responder),
		})
	}
	for _, rs := range m.Responders {
		v := responderView{
			Name: rs.Name, Anchor: responderAnchor(rs.Name), Description: rs.Description,
			Interface: rs.InterfaceName(), Queue: rs.Topology.Queue, Exchange: rs.Topology.Exchange,
			Prefetch: rs.Topology.Prefetch, Concurrency: rs.Topology.Concurrency,
		}
		for _, r := range rs.Requests {
			v.Requests = append(v.Requests, handledFact{r.Key, requestAnchor(r), r.MethodName()})
		}
		c.Responders = append(c.Responders, v)
	}
}

// mermaidRequests draws the request side: the requests exchange routes
// each request key to its responder's queue; replies go straight back to
// the caller (direct reply-to), past every exchange.
func mermaidRequests(b *strings.Builder, m *model.Model) {
	if len(m.Responders) == 0 {
		return
	}
	line := func(format string, args ...any) { fmt.Fprintf(b, "  "+format+"\n", args...) }
	line(`requests{{"%s"}}`, mermaidLabel(m.Exchanges.Requests))
	line(`caller(["requester"])`)
	line(`caller -->|"request"| requests`)
	for i, rs := range m.Responders {
		q, r := fmt.Sprintf("rq%d", i), fmt.Sprintf("rs%d", i)
		line(`%s[("%s")]`, q, mermaidLabel(rs.Topology.Queue))
		line(`%s(["%s"])`, r, mermaidLabel(rs.Name))
		for _, req := range rs.Requests {
			line(`requests -->|"%s"| %s`, mermaidLabel(req.Key), q)
		}
		line(`%s --> %s`, q, r)
		line(`%s -.->|"reply (direct reply-to)"| caller`, r)
	}
}
