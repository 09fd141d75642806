module github.com/warrenbus/warren/contrib/otel

go 1.26.0

require github.com/warrenbus/warren v0.0.0

replace github.com/warrenbus/warren => ../..
