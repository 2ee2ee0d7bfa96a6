package app

// The Idempotency-Key header applies to every authenticated write of every
// module (platform/idempotency), so the documents get it here, in one place,
// rather than in each operation of each module's file: a write added later is
// documented with it as it is served with it.

// idempotencyParameter is components.parameters.IdempotencyKey.
func idempotencyParameter() document {
	return document{
		"name":     "Idempotency-Key",
		"in":       "header",
		"required": false,
		"description": "Makes the write safe to retry (1-255 printable ASCII characters, e.g. a UUID per user action). " +
			"The first request with a key runs; its answer (status, body, `Content-Type`, `Location`, `X-Total-Count`) is " +
			"kept for `idempotency.ttl` (24 h) per token `sub`, method, path and key, and a repeat with the same body " +
			"answers it again with `Idempotent-Replayed: true`, changing nothing. The same key with another body " +
			"(SHA-256 of content type and body; a multipart boundary does not count) answers 422 " +
			"`idempotency_key_reused`; a repeat while the first still runs answers 409 `conflict` with `Retry-After: 1`. " +
			"Answers 5xx, 401, 408 and 429 are not kept: a retry runs again. An empty, longer or non-printable key " +
			"answers 400 `validation_failed` naming `Idempotency-Key`.",
		"schema":  document{"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x20-\\x7E]+$"},
		"example": "5f0c7d2e-8a1b-4c3d-9e4f-a1b2c3d4e5f6",
	}
}

func idempotencyError(description, code, message string, retryAfter bool) document {
	headers := document{
		"X-Request-ID":  document{"$ref": "#/components/headers/XRequestID"},
		"X-API-Version": document{"$ref": "#/components/headers/XAPIVersion"},
	}
	if retryAfter {
		headers["Retry-After"] = document{"$ref": "#/components/headers/RetryAfter"}
	}
	return document{
		"description": description,
		"headers":     headers,
		"content": document{"application/json": document{
			"schema":  document{"$ref": "#/components/schemas/Error"},
			"example": document{"status": "error", "code": code, "message": message, "stack": "", "body": document{}, "validation": []any{}},
		}},
	}
}

// addIdempotency documents the header, and the answers it adds, on every
// authenticated POST, PUT, PATCH and DELETE of d.
func addIdempotency(d document) {
	global, _ := d["security"].([]any)
	touched := false
	for _, item := range obj(d, "paths") {
		ops, ok := item.(document)
		if !ok {
			continue
		}
		for _, method := range []string{"post", "put", "patch", "delete"} {
			op, ok := ops[method].(document)
			if !ok {
				continue
			}
			security := global
			if s, ok := op["security"].([]any); ok {
				security = s
			}
			if len(security) == 0 {
				continue // public: no token, no scope
			}
			params, _ := op["parameters"].([]any)
			if tus(params) {
				continue // tus requests are safe to repeat by their own protocol
			}
			op["parameters"] = append(params, document{"$ref": "#/components/parameters/IdempotencyKey"})
			responses := obj(op, "responses")
			if _, ok := responses["422"]; !ok {
				responses["422"] = document{"$ref": "#/components/responses/IdempotencyKeyReused"}
			}
			if _, ok := responses["409"]; !ok {
				responses["409"] = document{"$ref": "#/components/responses/IdempotencyInFlight"}
			}
			if _, ok := responses["400"]; !ok {
				responses["400"] = document{"$ref": "#/components/responses/BadRequest"}
			}
			touched = true
		}
	}
	if !touched {
		return
	}
	comps := obj(d, "components")
	obj(comps, "parameters")["IdempotencyKey"] = idempotencyParameter()
	rs := obj(comps, "responses")
	rs["IdempotencyKeyReused"] = idempotencyError("`idempotency_key_reused`: the `Idempotency-Key` was used before with another request body.",
		"idempotency_key_reused", "This Idempotency-Key was used with another request; use a new key for a new request.", false)
	rs["IdempotencyInFlight"] = idempotencyError("`conflict`: a request with this `Idempotency-Key` is still running; retry after `Retry-After` seconds.",
		"conflict", "A request with this Idempotency-Key is still running; retry after Retry-After.", true)
}

// tus tells the operations of the resumable uploads (they take Tus-Resumable),
// which platform/idempotency leaves alone.
func tus(params []any) bool {
	for _, p := range params {
		if m, ok := p.(document); ok && (m["$ref"] == "#/components/parameters/TusResumable" || m["name"] == "Tus-Resumable") {
			return true
		}
	}
	return false
}
