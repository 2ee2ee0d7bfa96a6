package apierr

// Classifier recognises the failures of one dependency that mean it is down,
// restarting, failing over or too busy to answer now: the request may succeed
// when repeated a moment later. Each dependency's package owns its own test
// (db.IsUnavailable for the database drivers, filestore.IsUnavailable for the
// object store, cache.IsUnavailable for Redis); the app hands them to the
// middleware once (RenderOptions.Unavailable), so that apierr imports none of
// them and they need not import each other.
type Classifier struct {
	// Dependency names it in the answer: "the database" → "the database is unavailable".
	Dependency string
	// Is tells whether err, anywhere in its chain, is such a failure.
	Is func(err error) bool
}

// RetryAfterUnavailable is the Retry-After, in seconds, of every 503 unavailable.
const RetryAfterUnavailable = 5

// Classify returns the answer for err: err's own *Error when it has one
// (a deliberate 4xx or 503 stays what it is), else 503 unavailable when a
// classifier recognises err, else 500 internal. An *Error of code internal
// whose cause a classifier recognises is answered 503 too: "internal" only
// says the service did not expect the failure, and a dependency that is down
// is not a defect of the service. That way every feature, including those
// that wrap any store error in Internal, answers 503 during an outage.
func Classify(err error, classifiers []Classifier) *Error {
	e, ok := As(err)
	if ok && e.Code != CodeInternal {
		return e
	}
	for _, c := range classifiers {
		if c.Is != nil && c.Is(err) {
			return Unavailable(err, c.Dependency)
		}
	}
	if ok {
		return e
	}
	return Internal(err)
}
