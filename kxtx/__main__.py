from kxtx.cli.entry import main

main()
