DROP TABLE platform_files;
