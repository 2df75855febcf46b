"""Short texts in several languages, for the tests of how a page's language is found."""

EN = ("Run the installer from your terminal and follow the prompts. The installer checks your system, downloads "
      "the packages the tool needs and writes a configuration file in your home folder. When it finishes, open a "
      "new terminal and run the version command to check that everything works.")
ES = ("Ejecute el instalador desde su terminal y siga las instrucciones. El instalador comprueba su sistema, "
      "descarga los paquetes que necesita la herramienta y escribe un archivo de configuración en su carpeta "
      "personal. Cuando termine, abra una nueva terminal y ejecute el comando de versión.")
FR = ("Lancez le programme d'installation depuis votre terminal et suivez les instructions. Il vérifie votre "
      "système, télécharge les paquets dont l'outil a besoin et écrit un fichier de configuration dans votre "
      "dossier personnel. Ouvrez ensuite un nouveau terminal et lancez la commande de version.")
IT = ("Questa pagina spiega come installare lo strumento sul tuo computer. Prima di iniziare, controlla che il "
      "sistema sia aggiornato e che tu abbia i permessi di amministratore. Poi scarica il pacchetto dal sito "
      "ufficiale, aprilo e segui le istruzioni che compaiono sullo schermo fino alla fine della procedura.")
DE = ("Diese Seite erklärt, wie Sie das Werkzeug auf Ihrem Rechner installieren. Prüfen Sie zuerst, ob das System "
      "aktuell ist und ob Sie Administratorrechte haben. Laden Sie dann das Paket von der offiziellen Seite herunter, "
      "öffnen Sie es und folgen Sie den Anweisungen auf dem Bildschirm.")
# English around Italian dish names: a character model reads Italian, the grammar is English
MENU = ("# Our autumn menu\n\nThis season the kitchen serves spaghetti alla carbonara, tagliatelle al ragù alla "
        "bolognese, penne all'arrabbiata, risotto ai funghi porcini, pappardelle al cinghiale, ossobuco alla milanese "
        "con gremolata, saltimbocca alla romana, vitello tonnato, carciofi alla giudia, parmigiana di melanzane, "
        "panna cotta ai frutti di bosco, tiramisù della casa and cannoli siciliani con ricotta.\n")
DISHES = ("# Menu\n\n- Spaghetti alla carbonara con guanciale e pecorino romano\n- Tagliatelle al ragù alla "
          "bolognese\n- Risotto ai funghi porcini e tartufo nero\n- Ossobuco alla milanese con gremolata e risotto "
          "allo zafferano\n- Saltimbocca alla romana con salvia\n- Parmigiana di melanzane al forno\n- Tiramisù "
          "della casa con mascarpone e caffè\n- Cannoli siciliani con ricotta di pecora\n\nThe chef recommends the "
          "pasta of the day.\n")
