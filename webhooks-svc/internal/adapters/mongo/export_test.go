package mongo

// DeliveryIndexes exposes the declared delivery indexes to the tests, which check their
// definitions: the embedded store creates only the unique ones.
var DeliveryIndexes = deliveryIndexes
