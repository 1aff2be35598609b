package api

// AuditPath is the audit trail's endpoint (ScopeAudit).
const AuditPath = "/v1/audit"
