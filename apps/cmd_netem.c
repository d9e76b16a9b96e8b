int qk_cmd_netem(int argc, char **argv) { (void)argc; (void)argv; return 1; }
