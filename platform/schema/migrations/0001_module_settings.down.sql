DROP TABLE platform_module_settings;
