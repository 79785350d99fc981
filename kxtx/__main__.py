from kxtx.cli.app import main

main()
