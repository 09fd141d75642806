package model

import (
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/names"
	"github.com/warrenbus/warren/runtime/topology"
)

// Request is one request: its key, its Go type and its reply's, and the
// responder that answers it.
type Request struct {
	Key         string // x-request
	GoName      string // the request type's name: title, or the key in camel case
	Version     int
	Source      string // the request's schema file
	Description string
	Deprecated  bool
	Type        *Type      // the request payload's type
	Reply       *Type      // the reply's type: ReplyType(GoName) when inline, else the type its $ref leads to
	Responder   *Responder // the one responder that answers it

	decl *load.Request
}

// Location returns the request payload's schema: what requests are
// validated against.
func (r *Request) Location() string { return r.Source }

// ReplyLocation returns the reply's schema, "file#/x-reply": what replies
// are validated against.
func (r *Request) ReplyLocation() string { return location(r.Source, r.decl.Reply.Pointer) }

// MethodName returns the name of the Requester method and of the
// responder's interface method: QuotePricing for pricing.quote.
func (r *Request) MethodName() string { return names.RequestMethod(r.Key) }

// VarName returns the name of the request's runtime.Request variable.
func (r *Request) VarName() string { return names.RequestVar(r.typeName()) }

// KeyConst returns the name of the request's routing-key constant.
func (r *Request) KeyConst() string { return names.RequestKeyConst(r.typeName()) }

// typeName is the request type's name once collisions are resolved.
func (r *Request) typeName() string {
	if r.Type != nil {
		return r.Type.GoName
	}
	return r.GoName
}

// Responder is one entry of the manifest's "responders".
type Responder struct {
	Name        string
	Description string
	Requests    []*Request // sorted by key
	// Topology is the responder's entry in Model.Topology: its queue and
	// limits, defaults applied.
	Topology *topology.Responder
}

// InterfaceName returns the name of the responder's interface.
func (r *Responder) InterfaceName() string { return names.Responder(r.Name) }

// ConstructorName returns the name of the function that binds an
// implementation of the interface to the runtime.
func (r *Responder) ConstructorName() string { return names.ResponderConstructor(r.Name) }

// addRequests creates a Request per loaded request and its Go types, and a
// Responder per manifest entry. The request payload is declared under the
// request's name, like a fact's; an inline reply under ReplyType of it.
func (b *builder) addRequests(m *Model) {
	byKey := map[string]*Request{}
	for _, lr := range b.s.Requests {
		r := &Request{
			Key: lr.Key, Version: lr.Version, Source: lr.Path(),
			Description: lr.Description, Deprecated: lr.Deprecated, decl: lr,
		}
		r.GoName = names.Type(lr.Key)
		if lr.Title != "" {
			r.GoName = names.Type(lr.Title)
		}
		r.Type = b.requestType(payloadNode(lr.Schema), r.GoName, lr, "request")
		replyNode := payloadNode(lr.Reply)
		replyName := names.ReplyType(r.GoName)
		if replyNode != lr.Reply { // a $ref: the type is the target's, under its own name
			replyName = ""
		}
		r.Reply = b.requestType(replyNode, replyName, lr, "reply")
		byKey[r.Key] = r
		m.Requests = append(m.Requests, r)
	}
	slices.SortFunc(m.Requests, func(a, b *Request) int { return strings.Compare(a.Key, b.Key) })
	for _, lr := range b.s.Manifest.Responders {
		rs := &Responder{Name: lr.Name, Description: lr.Description}
		for _, key := range lr.Requests {
			if r := byKey[key]; r != nil {
				r.Responder = rs
				rs.Requests = append(rs.Requests, r)
			}
		}
		slices.SortFunc(rs.Requests, func(a, b *Request) int { return strings.Compare(a.Key, b.Key) })
		m.Responders = append(m.Responders, rs)
	}
}

// requestType declares the Go type of a request's payload or reply at n,
// named name (or by the usual rules when name is ""). It must be a named
// type of its own: the Requester's method signature uses it.
func (b *builder) requestType(n *load.Schema, name string, lr *load.Request, what string) *Type {
	if name != "" {
		if prev, ok := b.factByNode[n]; ok {
			b.errs.Add(lr.Doc.Errorf("/x-request", "request %s: its %s schema %s is already the payload of %s; give each its own schema (an allOf of the shared one)", lr.Key, what, n.Location(), prev.RoutingKey))
			return nil
		}
		b.factByNode[n] = &Fact{RoutingKey: lr.Key, GoName: name}
	}
	ref := b.typeOf(n)
	if ref.Kind != Named || ref.Type.Kind == Alias {
		b.errs.Add(n.Doc.Errorf(n.Pointer, "request %s: expected the %s schema to say what it holds (an object, a union, a scalar or an array type), not only another name for another type", lr.Key, what))
		return nil
	}
	return ref.Type
}

// responderSpecs are the manifest's responders with /defaults applied
// where a responder leaves a setting out.
func (b *builder) responderSpecs() []topology.ResponderSpec {
	man := b.s.Manifest
	var out []topology.ResponderSpec
	for _, r := range man.Responders {
		s := topology.ResponderSpec{Name: r.Name, Requests: r.Requests, QueueType: topology.QueueType(cmpOr(r.QueueType, man.Defaults.QueueType))}
		if p := cmpOrPtr(r.Prefetch, man.Defaults.Prefetch); p != nil {
			s.Prefetch = *p
		}
		if c := cmpOrPtr(r.Concurrency, man.Defaults.Concurrency); c != nil {
			s.Concurrency = *c
		}
		out = append(out, s)
	}
	return out
}

// linkResponders points each responder at its entry of the topology.
func (m *Model) linkResponders() {
	for _, r := range m.Responders {
		i := slices.IndexFunc(m.Topology.Responders, func(tr topology.Responder) bool { return tr.Name == r.Name })
		if i >= 0 {
			r.Topology = &m.Topology.Responders[i]
		}
	}
	if len(m.Topology.Responders) > 0 {
		m.Exchanges.Requests = m.Topology.Responders[0].Exchange
	}
}

func cmpOrPtr(a, b *int) *int {
	if a != nil {
		return a
	}
	return b
}

// claimRequests claims the package-level names of the request side, and
// checks that no two requests share a method name (the Requester has one
// method per request).
func (b *builder) claimRequests(m *Model, claim func(string, ident)) {
	if len(m.Requests) == 0 {
		return
	}
	man := b.s.Manifest.Doc
	for _, name := range []string{names.RequesterType, names.RequesterConstructor, names.RequestsExchangeVar} {
		claim(name, ident{what: name + ", which every package with requests declares", doc: man, fix: "set a \"title\" on the other"})
	}
	methods := map[string]*Request{}
	for _, r := range m.Requests {
		doc, ptr := r.decl.Doc, "/x-request"
		claim(r.VarName(), ident{"request variable of " + r.Key, doc, ptr, titleFix})
		claim(r.KeyConst(), ident{"request-key constant of " + r.Key, doc, ptr, titleFix})
		if prev, ok := methods[r.MethodName()]; ok {
			b.errs.Add(doc.Errorf(ptr, "request %s and request %s both become Requester method %s; rename one", strconv.Quote(prev.Key), strconv.Quote(r.Key), r.MethodName()))
			continue
		}
		methods[r.MethodName()] = r
	}
	for _, rs := range m.Responders {
		fix := "rename the responder or set a \"title\" on the other"
		ptr := load.Pointer("responders", rs.Name)
		claim(rs.InterfaceName(), ident{"interface of responder " + strconv.Quote(rs.Name), man, ptr, fix})
		claim(rs.ConstructorName(), ident{"constructor of responder " + strconv.Quote(rs.Name), man, ptr, fix})
	}
}
