from ffn_cli.cli import main

main()
