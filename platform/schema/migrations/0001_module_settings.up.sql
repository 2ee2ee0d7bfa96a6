-- Runtime settings of each module, changed through /<module>/v1/admin/settings.
CREATE TABLE platform_module_settings (
    module      TEXT PRIMARY KEY,
    log_level   TEXT NOT NULL,
    log_filter  TEXT NOT NULL DEFAULT '',
    updated_by  TEXT NOT NULL DEFAULT '',
    updated_at  TIMESTAMPTZ NOT NULL
);
