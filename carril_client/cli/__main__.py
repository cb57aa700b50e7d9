from carril_client.cli.app import main

main()
