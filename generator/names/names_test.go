package names

import (
	"slices"
	"testing"
)

func TestWords(t *testing.T) {
	tests := map[string][]string{
		"catalogue.import-completed": {"catalogue", "import", "completed"},
		"catalogueId":                {"catalogue", "Id"},
		"HTTPServer":                 {"HTTP", "Server"},
		"sku2Code":                   {"sku2", "Code"},
		"  __a__b  ":                 {"a", "b"},
		"größe":                      {"größe"},
		"":                           nil,
	}
	for in, want := range tests {
		if got := Words(in); !slices.Equal(got, want) {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestExported(t *testing.T) {
	tests := []struct{ in, want string }{
		{"catalogue.import-completed", "CatalogueImportCompleted"},
		{"catalogue_id", "CatalogueID"},
		{"catalogueId", "CatalogueID"},
		{"url", "URL"},
		{"image_urls", "ImageURLs"},
		{"user_ids", "UserIDs"},
		{"https", "HTTPS"},
		{"dns", "DNS"},
		{"status", "Status"},
		{"HTTPServer", "HTTPServer"},
		{"json", "JSON"},
		{"order placed", "OrderPlaced"},
		{"Order Placed", "OrderPlaced"},
		{"ALLCAPS", "Allcaps"},
		{"PENDING", "Pending"},
		{"SKU", "SKU"},
		{"catalogue SKU", "CatalogueSKU"},
		{"ORDER_ID", "OrderID"},
		{"MAX_RETRY_COUNT", "MaxRetryCount"},
		{"v2", "V2"},
		{"3d_model", "X3dModel"},
		{"größe", "Größe"},
		{"名前", "X名前"},
		{"type", "Type"},
		{"*/ injected", "Injected"},
		{"!!!", ""},
	}
	for _, tt := range tests {
		if got := Exported(tt.in); got != tt.want {
			t.Errorf("Exported(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEnumValue(t *testing.T) {
	tests := []struct{ typ, value, want string }{
		{"Status", "in-stock", "StatusInStock"},
		{"Status", "", "StatusEmpty"},
		{"Priority", "1", "Priority1"},
		{"Priority", "-1", "PriorityMinus1"},
		{"Currency", "EUR", "CurrencyEUR"},
		{"Size", "XL", "SizeXL"},
		{"Size", "2XL", "Size2XL"},
		{"Kind", "api_key", "KindAPIKey"},
		{"Op", "+", ""},
	}
	for _, tt := range tests {
		if got := EnumValue(tt.typ, tt.value); got != tt.want {
			t.Errorf("EnumValue(%q, %q) = %q, want %q", tt.typ, tt.value, got, tt.want)
		}
	}
}

func TestDerivedNames(t *testing.T) {
	checks := []struct{ got, want string }{
		{Handler("search-indexer"), "SearchIndexerHandler"},
		{Method("OrderPlaced"), "HandleOrderPlaced"},
		{FactVar("OrderPlaced"), "FactOrderPlaced"},
		{Publish("OrderPlaced"), "PublishOrderPlaced"},
		{ConsumerConstructor("search-indexer"), "NewSearchIndexerConsumer"},
		{ConsumerConstructor("audit_log.v2"), "NewAuditLogV2Consumer"},
		{RoutingKeyConst("OrderPlaced"), "OrderPlacedRoutingKey"},
		{DefaultConst("OrderPlaced", "Quantity"), "OrderPlacedQuantityDefault"},
		{Type("catalogue.item.updated"), "CatalogueItemUpdated"},
		{Field("catalogue_id"), "CatalogueID"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestIsReserved(t *testing.T) {
	for _, name := range []string{"type", "func", "string", "any", "len", "nil", "error", "iota"} {
		if !IsReserved(name) {
			t.Errorf("IsReserved(%q) = false", name)
		}
	}
	for _, name := range []string{"events", "String", "Type", "order"} {
		if IsReserved(name) {
			t.Errorf("IsReserved(%q) = true", name)
		}
	}
}

func TestCheckPackage(t *testing.T) {
	for _, ok := range []string{"events", "catalogueevents", "v2"} {
		if why := CheckPackage(ok); why != "" {
			t.Errorf("CheckPackage(%q) = %q, want ok", ok, why)
		}
	}
	for _, bad := range []string{"", "Events", "my_events", "my-events", "type", "string", "main", "2x"} {
		if CheckPackage(bad) == "" {
			t.Errorf("CheckPackage(%q) accepted a bad name", bad)
		}
	}
}

func TestFile(t *testing.T) {
	tests := []struct{ in, want string }{
		{"catalogue/import-completed.json", "catalogue_import-completed.json.go"},
		{"order.json", "order.json.go"},
		{"Order/Placed.json", "order_placed.json.go"},
		{"_private.json", "private.json.go"},
		{".hidden/x.json", "hidden_x.json.go"},
		{"x_linux.json", "x_linux.json.go"},
		{"a b/c$d.json", "a_b_c_d.json.go"},
		{"订单.json", "json.json.go"},
		{"ΣΑΣ", "schema.json.go"},
	}
	for _, tt := range tests {
		if got := File(tt.in); got != tt.want {
			t.Errorf("File(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
